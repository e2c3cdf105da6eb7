package config

import (
	"fmt"
	"strings"

	"github.com/wfhq/wf/internal/lines"
)

// SourceKind says which layer a value came from.
type SourceKind int

// The layers of a configuration, lowest precedence first.
const (
	SourceDefault SourceKind = iota
	SourceFile
	SourceEnv
	SourceFlag
)

// Source is where a value came from: a position in a file, an environment
// variable or a flag. Errors name it so an operator knows what to fix.
type Source struct {
	// Kind is the layer: default, file, environment or flag.
	Kind SourceKind
	// Name is the file path, the variable name or the flag name (with its
	// dashes).
	Name string
	// Line and Col are 1-based positions in a file (0 when unknown).
	Line, Col int
	// Key is the field path the variable or flag sets ("" for files).
	Key string
}

// String formats the source: "wf.yaml:3:7", "environment variable WF_SLOTS",
// "flag --log-level", or "" for a default.
func (s Source) String() string {
	switch s.Kind {
	case SourceFile:
		switch {
		case s.Line > 0 && s.Col > 0:
			return fmt.Sprintf("%s:%d:%d", s.Name, s.Line, s.Col)
		case s.Line > 0:
			return fmt.Sprintf("%s:%d", s.Name, s.Line)
		default:
			return s.Name
		}
	case SourceEnv:
		return "environment variable " + s.Name
	case SourceFlag:
		return "flag " + s.Name
	default:
		return ""
	}
}

// Error is one configuration problem: where, which field, and what is wrong
// or expected.
type Error struct {
	// Source is where the bad value came from (the default when unknown).
	Source Source
	// Field is the field path ("retention.completed", "tokens[1].role"), or
	// "" when the problem is the whole file.
	Field string
	// Message says what is wrong or what was expected.
	Message string
}

// Error formats the problem as "source: field: message", leaving out what
// is empty or what the source already names.
func (e Error) Error() string {
	var parts []string
	if s := e.Source.String(); s != "" {
		parts = append(parts, s)
	}
	if e.Field != "" && e.Field != e.Source.Key {
		parts = append(parts, e.Field)
	}
	parts = append(parts, e.Message)
	return strings.Join(parts, ": ")
}

// Errors are every problem Load or Validate found, in the order found.
type Errors []Error

// Error lists the problems, one a line.
func (es Errors) Error() string {
	return lines.Join(es, Error.Error)
}

// OnlyFlags reports whether every problem comes from a command-line flag, so
// that a command line can answer with a usage error.
func (es Errors) OnlyFlags() bool {
	if len(es) == 0 {
		return false
	}
	for _, e := range es {
		if e.Source.Kind != SourceFlag {
			return false
		}
	}
	return true
}

// orNil returns es as an error, or nil when there is no problem.
func (es Errors) orNil() error {
	if len(es) == 0 {
		return nil
	}
	return es
}
