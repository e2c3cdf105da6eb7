package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

// Names of the default handlers.
const (
	// NameNoop is the handler that does nothing and succeeds.
	NameNoop = "noop"
	// NameSleep is the handler that waits for the duration in its inputs.
	NameSleep = "sleep"
	// NameFail is the handler that fails with the message in its inputs.
	NameFail = "fail"
)

// Noop succeeds at once with no outputs; it is useful for smoke tests and for
// task types that exist only to emit events.
func Noop(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
	return nil, nil
}

// sleepInputs are the inputs of the sleep handler.
type sleepInputs struct {
	// Duration is a Go duration string such as "250ms" or "2s".
	Duration string `json:"duration"`
}

// Sleep waits for the duration in its inputs ({"duration": "250ms"}), or
// until ctx is done, whichever comes first. Missing or invalid inputs are a
// permanent failure: retrying the same inputs cannot help.
func Sleep(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	var in sleepInputs
	if err := ReadInputs(task.Inputs, &in, "sleep inputs"); err != nil {
		return nil, err
	}
	if in.Duration == "" {
		return nil, wftype.Permanent(errors.New(`error reading sleep inputs: "duration" is required, for example {"duration": "250ms"}`))
	}
	d, err := time.ParseDuration(in.Duration)
	if err != nil {
		return nil, wftype.Permanent(fmt.Errorf("error reading sleep inputs: \"duration\": %w", err))
	}
	if d < 0 {
		return nil, wftype.Permanent(fmt.Errorf("error reading sleep inputs: \"duration\" is %s, want zero or more", d))
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("error sleeping for %s: %w", d, ctx.Err())
	}
}

// failInputs are the inputs of the fail handler.
type failInputs struct {
	// Message is the error message; a default is used when it is empty.
	Message string `json:"message"`
	// Permanent asks for a failure that is not retried.
	Permanent bool `json:"permanent"`
}

// Fail always fails, with the message in its inputs ({"message": "...",
// "permanent": true}); the failure is permanent when asked. It exists to
// exercise retries, dead-lettering and failure events end to end.
func Fail(_ context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	var in failInputs
	if err := ReadInputs(task.Inputs, &in, "fail inputs"); err != nil {
		return nil, err
	}
	if in.Message == "" {
		in.Message = "the fail handler failed as asked"
	}
	err := errors.New(in.Message)
	if in.Permanent {
		return nil, wftype.Permanent(err)
	}
	return nil, err
}

// DecodeInputs decodes a task's inputs strictly: unknown fields are errors,
// so that a typo in a spec or a request is reported instead of ignored, as
// is anything after the object. Empty or null inputs leave v as it is. It
// is the one decoder of builtin handlers' inputs, wf's and the catalog's.
func DecodeInputs(raw json.RawMessage, v any) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the inputs object")
	}
	return nil
}

// ReadInputs is DecodeInputs for a handler: inputs that do not decode fail
// the task for good (retrying the same inputs cannot help), with the error
// "error reading <what>: …", what naming the inputs ("sleep inputs").
func ReadInputs(raw json.RawMessage, v any, what string) error {
	if err := DecodeInputs(raw, v); err != nil {
		return wftype.Permanent(fmt.Errorf("error reading %s: %w", what, err))
	}
	return nil
}

// ParseInputs decodes a task's inputs strictly (DecodeInputs) into a T and
// lets check fill its defaults and list every problem it finds, so that a
// handler reports all of them at once. what names the inputs in the
// errors: "error reading the <what> inputs: …" when they do not decode,
// "invalid <what> inputs: …" (check's errors joined) when they are wrong.
func ParseInputs[T any](raw json.RawMessage, what string, check func(*T) []error) (T, error) {
	var in T
	if err := DecodeInputs(raw, &in); err != nil {
		return in, fmt.Errorf("error reading the %s inputs: %w", what, err)
	}
	if err := errors.Join(check(&in)...); err != nil {
		return in, fmt.Errorf("invalid %s inputs: %w", what, err)
	}
	return in, nil
}
