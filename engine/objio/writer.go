package objio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Writer streams one object to its location. The object appears only when
// Close succeeds; Abort (or a failed Close) leaves nothing behind.
type Writer struct {
	loc    string
	write  func([]byte) (int, error)
	commit func() error
	abort  func()
	done   bool
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("error writing %s: the writer is closed", w.loc)
	}
	n, err := w.write(p)
	if err != nil {
		return n, fmt.Errorf("error writing %s: %w", w.loc, err)
	}
	return n, nil
}

// Close finishes the object and makes it visible at its location.
func (w *Writer) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	if err := w.commit(); err != nil {
		return fmt.Errorf("error finishing %s: %w", w.loc, err)
	}
	return nil
}

// Abort discards what was written; the location is left as it was. It is
// safe after Close (then it does nothing).
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.abort()
}

// Create returns a writer of a new object at loc (a local path, gs:// or
// file://; http locations cannot be written), replacing any object there
// when the writer is closed. contentType labels bucket objects.
func (o *Opener) Create(ctx context.Context, loc, contentType string) (*Writer, error) {
	l, err := o.parse(loc)
	if err != nil {
		return nil, err
	}
	switch l.scheme {
	case "http", "https":
		return nil, fmt.Errorf("%w: %s: http(s) locations are read only, want a local path, gs:// or file://", ErrInvalid, loc)
	case "gs":
		return o.createGCS(ctx, l, contentType)
	}
	return createLocal(loc, l.path)
}

// createLocal writes to a temporary file next to path and renames it into
// place on Close.
func createLocal(loc, path string) (*Writer, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("error creating folder %s: %w", dir, osError(err))
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("error creating %s: %w", loc, osError(err))
	}
	return &Writer{
		loc:   loc,
		write: f.Write,
		commit: func() error {
			err := errors.Join(f.Sync(), f.Close())
			if err == nil {
				err = os.Rename(f.Name(), path)
			}
			if err != nil {
				_ = os.Remove(f.Name())
			}
			return err
		},
		abort: func() {
			_ = f.Close()
			_ = os.Remove(f.Name())
		},
	}, nil
}
