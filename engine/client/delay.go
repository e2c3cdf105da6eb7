package client

import (
	"fmt"
	"strings"
	"time"
)

// DelayError is a bad run_at or delay: Field names which ("run_at" or
// "run_in"), Message what is wrong.
type DelayError struct {
	Field   string
	Message string
}

// Error implements error.
func (e *DelayError) Error() string { return e.Field + ": " + e.Message }

// ParseDelay reads when a task should first run, for Request.RunAfter:
// runAt is a time in RFC 3339 (2026-12-01T18:00:00Z, or with an offset), in
// is a delay from now in Go's duration syntax (90s, 5m, 1h30m). At most one
// may be given; neither gives nil (now). A time in the past means now.
func ParseDelay(now time.Time, runAt, in string) (*time.Time, error) {
	runAt, in = strings.TrimSpace(runAt), strings.TrimSpace(in)
	switch {
	case runAt != "" && in != "":
		return nil, &DelayError{Field: "run_at", Message: "give run_at or a delay, not both"}
	case runAt != "":
		t, err := time.Parse(time.RFC3339Nano, runAt)
		if err != nil {
			return nil, &DelayError{Field: "run_at", Message: fmt.Sprintf("expected a time in RFC 3339 such as 2026-12-01T18:00:00Z, got %q", runAt)}
		}
		t = t.UTC()
		return &t, nil
	case in != "":
		d, err := time.ParseDuration(in)
		if err != nil {
			return nil, &DelayError{Field: "run_in", Message: fmt.Sprintf("expected a duration such as 90s, 5m or 1h30m, got %q", in)}
		}
		if d < 0 {
			return nil, &DelayError{Field: "run_in", Message: fmt.Sprintf("must not be negative, got %s", in)}
		}
		t := now.Add(d).UTC()
		return &t, nil
	}
	return nil, nil
}
