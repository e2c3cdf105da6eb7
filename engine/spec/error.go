package spec

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/wfhq/wf/internal/lines"
)

// Error is one problem in a spec file, at the position of the YAML node at
// fault (1-based line and column).
type Error struct {
	File    string
	Line    int
	Col     int
	Message string
}

// String formats the error as file:line:col: message, the form editors and
// CI logs link to.
func (e Error) String() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Message)
}

// Error implements error, so a single Error can travel as one.
func (e Error) Error() string { return e.String() }

// compareErrors orders errors by file, line, column and message.
func compareErrors(a, b Error) int {
	return cmp.Or(
		cmp.Compare(a.File, b.File),
		cmp.Compare(a.Line, b.Line),
		cmp.Compare(a.Col, b.Col),
		cmp.Compare(a.Message, b.Message),
	)
}

// Errors is every problem found in a set of spec files, sorted by file, line
// and column. Compile returns it (as error) when a set is invalid.
type Errors []Error

// Error implements error: one problem per line.
func (es Errors) Error() string {
	return lines.Join(es, Error.String)
}

// sorted returns es sorted, without exact duplicates (two schema paths can
// report the same problem at the same node).
func (es Errors) sorted() Errors {
	out := slices.Clone(es)
	slices.SortFunc(out, compareErrors)
	return slices.Compact(out)
}
