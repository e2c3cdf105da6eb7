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
