package exec

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

// readRecords decodes one envelope per line from r and reports each to rep as
// soon as it is read, so memory stays bounded by one line (at most maxLine
// bytes) however many records the child writes. Blank lines are skipped. A
// malformed line (not one JSON object, or one that breaks the envelope
// schema) is a permanent error naming its line number; a reporter failure is
// a retryable one.
func readRecords(ctx context.Context, r io.Reader, rep reporters.Reporter, maxLine int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64*1024, maxLine)), maxLine)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		env, err := decodeEnvelope(text)
		if err != nil {
			return wftype.Permanent(fmt.Errorf("error reading records from file descriptor %d: line %d: %w", recordsFD, line, err))
		}
		if err := rep.Report(ctx, env); err != nil {
			return fmt.Errorf("error reporting the record on line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return nil // closed by the runner after its drain timeout
		}
		if errors.Is(err, bufio.ErrTooLong) {
			return wftype.Permanent(fmt.Errorf("error reading records from file descriptor %d: line %d: longer than %d bytes", recordsFD, line+1, maxLine))
		}
		return fmt.Errorf("error reading records from file descriptor %d after line %d: %w", recordsFD, line, err)
	}
	return nil
}

// decodeEnvelope decodes one line: exactly one JSON object that follows
// the envelope schema (schemas/envelope.schema.json). The error names the
// JSON pointer of every problem.
func decodeEnvelope(line []byte) (reporters.Envelope, error) {
	return reporters.ValidateEnvelope(line)
}
