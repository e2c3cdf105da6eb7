package spec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestErrors(t *testing.T) {
	t.Parallel()
	e := Error{File: "specs/a.yaml", Line: 3, Col: 7, Message: "name: bad"}
	require.Equal(t, "specs/a.yaml:3:7: name: bad", e.String())
	require.Equal(t, e.String(), e.Error())

	errs := Errors{
		{File: "b.yaml", Line: 1, Col: 1, Message: "z"},
		{File: "a.yaml", Line: 10, Col: 1, Message: "y"},
		{File: "a.yaml", Line: 2, Col: 5, Message: "x"},
		{File: "a.yaml", Line: 2, Col: 5, Message: "x"},
		{File: "a.yaml", Line: 2, Col: 3, Message: "w"},
	}.sorted()
	require.Equal(t, "a.yaml:2:3: w\na.yaml:2:5: x\na.yaml:10:1: y\nb.yaml:1:1: z", errs.Error())
}

func TestErrorsReportEverythingAcrossFiles(t *testing.T) {
	t.Parallel()
	_, err := Compile([]Source{
		{Name: "b.yaml", Data: []byte("kind: Schedule\nname: s\ncron: '@daily'\ntask_type: missing\n")},
		{Name: "a.yaml", Data: []byte("kind: TaskType\nname: t\nhandler: {builtin: nope}\npriority: 500\n")},
	}, testOptions())
	var errs Errors
	require.ErrorAs(t, err, &errs)
	require.Equal(t, Errors{
		{File: "a.yaml", Line: 3, Col: 20, Message: `handler.builtin: unknown builtin handler "nope"; did you mean "noop"?`},
		{File: "a.yaml", Line: 4, Col: 11, Message: "priority: must be <= 100; got 500"},
		{File: "b.yaml", Line: 4, Col: 12, Message: `task_type: unknown task type "missing"`},
	}, errs)
}

func TestNoBuiltinsKnown(t *testing.T) {
	t.Parallel()
	_, err := Compile([]Source{{Name: "a.yaml", Data: []byte("kind: TaskType\nname: t\nhandler: {builtin: noop}\n")}}, Options{})
	require.EqualError(t, err, `a.yaml:3:20: handler.builtin: unknown builtin handler "noop"`)
}

func TestEmptyInput(t *testing.T) {
	t.Parallel()
	set, err := Compile([]Source{{Name: "empty.yaml", Data: []byte("# nothing here\n---\n")}}, testOptions())
	require.NoError(t, err)
	require.Empty(t, set.TaskTypes())
	require.Equal(t, []string{"empty.yaml"}, set.Files())
}
