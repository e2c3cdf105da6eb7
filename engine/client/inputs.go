package client

import (
	"encoding/json"
	"errors"

	"github.com/wfhq/wf/engine/spec"
)

// checkedInputs remembers, for one call, the inputs already decoded and
// checked against their task type's schema, by task type and then by the
// inputs' text: a batch that gives many tasks the same inputs (a fan-out,
// `wf enqueue --count`, a bench) decodes and validates them once. The same
// text of the same type always gets the same verdict, so nothing is
// checked less; what depends on the tenant (files, the dedup key) is still
// checked per request. A value is the decoded inputs, nil when they are
// valid but not an object; the requests that gave the same text share it
// and only read it. A nil checkedInputs remembers nothing.
type checkedInputs map[string]map[string]map[string]any

// check decodes raw (the inputs of a task of type tt) and validates it
// against tt's schema, or returns what it found for the same text before.
// A failure is not remembered: it fails the whole call.
func (c checkedInputs) check(tt *spec.TaskType, raw json.RawMessage) (map[string]any, error) {
	if obj, ok := c[tt.Name()][string(raw)]; ok {
		return obj, nil
	}
	var inputs any
	if err := json.Unmarshal(raw, &inputs); err != nil {
		return nil, &ValidationError{TaskType: tt.Name(), Field: "inputs", Message: "inputs are not valid JSON: " + err.Error()}
	}
	if err := tt.ValidateInputs(inputs); err != nil {
		var ie spec.InputErrors
		if errors.As(err, &ie) {
			return nil, &ValidationError{TaskType: tt.Name(), Inputs: ie}
		}
		return nil, &ValidationError{TaskType: tt.Name(), Field: "inputs", Message: err.Error()}
	}
	obj, _ := inputs.(map[string]any)
	if c != nil {
		byText := c[tt.Name()]
		if byText == nil {
			byText = map[string]map[string]any{}
			c[tt.Name()] = byText
		}
		byText[string(raw)] = obj
	}
	return obj, nil
}
