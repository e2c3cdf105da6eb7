package spec

import "fmt"

// Location is where a spec document starts: its file and 1-based line and
// column. Logs and error messages of the engine point operators there.
type Location struct {
	File string
	Line int
	Col  int
}

// String formats the location as file:line:col.
func (l Location) String() string { return fmt.Sprintf("%s:%d:%d", l.File, l.Line, l.Col) }

// location returns where the document starts.
func (d *document) location() Location {
	return Location{File: d.file, Line: d.pos.Line, Col: d.pos.Col}
}

// named is what every spec, and every step of a workflow, says of itself:
// its name, its description and where it is declared.
type named struct {
	name        string
	description string
	source      Location
}

// Name is the spec's name (a task type's is the task_type column of its
// tasks; a step's is unique within its workflow).
func (n named) Name() string { return n.name }

// Description says what the spec is for.
func (n named) Description() string { return n.description }

// Source is where the spec is declared.
func (n named) Source() Location { return n.source }

// named is a spec of this document called name.
func (d *document) named(name, description string) named {
	return named{name: name, description: description, source: d.location()}
}
