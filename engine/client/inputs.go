package client

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/wfhq/wf/engine/spec"
)

// lastInputs remembers, within one call, the inputs of the request checked
// last: a run of requests that give the same type the same inputs (a
// fan-out, `wf enqueue --count`, a bench) decodes and validates them once,
// and requests that each give their own cost one comparison more. The same
// text of the same type always gets the same verdict, so nothing is checked
// less; what depends on the tenant (files, the dedup key) is still checked
// per request. A nil *lastInputs remembers nothing.
type lastInputs struct {
	taskType string
	text     []byte // the request's own bytes, which the call does not change
	// obj is text decoded, nil when it is valid but not an object; the
	// requests of the run share it and only read it.
	obj map[string]any
}

// check decodes raw (the inputs of a task of type tt) and validates it
// against tt's schema, unless it is the text checked last for tt. A failure
// is not remembered: it fails the whole call.
func (l *lastInputs) check(tt *spec.TaskType, raw json.RawMessage) (map[string]any, error) {
	if l != nil && l.text != nil && l.taskType == tt.Name() && bytes.Equal(l.text, raw) {
		return l.obj, nil
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
	if l != nil {
		*l = lastInputs{taskType: tt.Name(), text: raw, obj: obj}
	}
	return obj, nil
}
