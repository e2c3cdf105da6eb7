package objio

import (
	"context"
	"crypto/rand"
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
	return o.createLocal(l)
}

// createLocal writes to a temporary file next to the local file and
// renames it into place on Close. It works through an os.Root of the
// file's folder, created first if missing: when roots are set, that folder
// is created and opened through an os.Root of the file's root, so no link
// leads out of the root; the temporary file and the rename then stay in
// that folder.
func (o *Opener) createLocal(l location) (*Writer, error) {
	if l.root != "" && l.rel == "." {
		return nil, fmt.Errorf("%w: %s is the allowed folder %s itself, want a file in it", ErrInvalid, l.raw, o.show(l.root))
	}
	if o.checked != nil {
		o.checked(l)
	}
	dir, err := o.localFolder(l)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(l.path)
	// os.Root has no CreateTemp: a random name, created exclusively.
	tmp := "." + name + "." + rand.Text() + ".tmp"
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644) // readable like any exported file (umask applies)
	if err != nil {
		_ = dir.Close()
		return nil, fmt.Errorf("error creating %s: %w", l.raw, osError(err))
	}
	return &Writer{
		loc:   l.raw,
		write: f.Write,
		commit: func() error {
			defer dir.Close()
			err := errors.Join(f.Sync(), f.Close())
			if err == nil {
				err = dir.Rename(tmp, name)
			}
			if err != nil {
				_ = dir.Remove(tmp)
			}
			return err
		},
		abort: func() {
			_ = f.Close()
			_ = dir.Remove(tmp)
			_ = dir.Close()
		},
	}, nil
}

// localFolder creates the folder of a local file if missing and returns an
// os.Root of it. With roots set, it goes through an os.Root of the file's
// root (itself created if missing: it comes from the configuration, not
// from the location), by the folder's path relative to it.
func (o *Opener) localFolder(l location) (*os.Root, error) {
	if l.root == "" {
		dir := filepath.Dir(l.path)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("error creating folder %s: %w", dir, osError(err))
		}
		d, err := os.OpenRoot(dir)
		if err != nil {
			return nil, fmt.Errorf("error opening folder %s: %w", dir, osError(err))
		}
		return d, nil
	}
	if err := os.MkdirAll(l.root, 0o755); err != nil {
		return nil, fmt.Errorf("error creating folder %s: %w", o.show(l.root), osError(err))
	}
	root, err := os.OpenRoot(l.root)
	if err != nil {
		return nil, fmt.Errorf("error opening folder %s: %w", o.show(l.root), osError(err))
	}
	defer root.Close()
	dir := filepath.Dir(l.path)
	rel := filepath.Dir(l.rel)
	if err := root.MkdirAll(rel, 0o755); err != nil {
		return nil, fmt.Errorf("error creating folder %s: %w", o.show(dir), o.rootError(root, dir, err))
	}
	d, err := root.OpenRoot(rel)
	if err != nil {
		return nil, fmt.Errorf("error opening folder %s: %w", o.show(dir), o.rootError(root, dir, err))
	}
	return d, nil
}
