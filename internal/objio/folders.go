package objio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	storage "google.golang.org/api/storage/v1"
)

// Folders of objects: a gs:// prefix (the objects whose keys start with
// it and a '/'), or a local folder (file:// or a path). They serve caches
// kept under a location of the operator's (the tile cache), which are
// listed level by level and removed a folder at a time.

// Folders returns the names of the folders directly inside the folder at
// loc, sorted: on Cloud Storage, the key segments that follow loc's key and
// a '/' and are themselves followed by one. A folder that does not exist
// has none.
func (o *Opener) Folders(ctx context.Context, loc string) ([]string, error) {
	l, err := o.parseFolder(loc)
	if err != nil {
		return nil, err
	}
	if l.scheme == "gs" {
		svc, err := o.gcs(ctx)
		if err != nil {
			return nil, fmt.Errorf("error listing %s: %w", loc, err)
		}
		var names []string
		err = svc.Objects.List(l.bucket).Prefix(l.key).Delimiter("/").Fields("prefixes", "nextPageToken").Context(ctx).
			Pages(ctx, func(page *storage.Objects) error {
				for _, p := range page.Prefixes {
					names = append(names, strings.TrimSuffix(strings.TrimPrefix(p, l.key), "/"))
				}
				return nil
			})
		if err != nil {
			return nil, fmt.Errorf("error listing %s: %w", loc, gcsError(err))
		}
		slices.Sort(names)
		return names, nil
	}
	entries, err := o.readLocalFolder(l)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error listing %s: %w", loc, osError(err))
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil // os.ReadDir sorts by name
}

// RemoveAll deletes the folder at loc with everything in it and returns
// how many objects (local files) went. A folder that does not exist is
// nothing to remove; an object that disappears meanwhile is not an error.
func (o *Opener) RemoveAll(ctx context.Context, loc string) (int, error) {
	l, err := o.parseFolder(loc)
	if err != nil {
		return 0, err
	}
	if l.scheme == "gs" {
		if l.key == "" {
			return 0, fmt.Errorf("%w: %s is a whole bucket, want a folder in it", ErrInvalid, loc)
		}
		return o.removeGCS(ctx, l)
	}
	if l.root != "" && l.rel == "." {
		return 0, fmt.Errorf("%w: %s is the allowed folder %s itself, want a folder in it", ErrInvalid, loc, o.show(l.root))
	}
	n := 0
	err = o.walkLocal(l, func(_ string, d fs.DirEntry) {
		if !d.IsDir() {
			n++
		}
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err == nil {
		err = o.removeLocal(l)
	}
	if err != nil {
		return 0, fmt.Errorf("error removing %s: %w", loc, osError(err))
	}
	return n, nil
}

// removeGCS deletes every object under l's key and a '/'.
func (o *Opener) removeGCS(ctx context.Context, l location) (int, error) {
	svc, err := o.gcs(ctx)
	if err != nil {
		return 0, fmt.Errorf("error removing %s: %w", l.raw, err)
	}
	n := 0
	err = svc.Objects.List(l.bucket).Prefix(l.key).Fields("items(name)", "nextPageToken").Context(ctx).
		Pages(ctx, func(page *storage.Objects) error {
			for _, obj := range page.Items {
				err := svc.Objects.Delete(l.bucket, obj.Name).Context(ctx).Do()
				if err != nil && !errors.Is(gcsError(err), ErrNotFound) {
					return fmt.Errorf("error deleting gs://%s/%s: %w", l.bucket, obj.Name, gcsError(err))
				}
				if err == nil {
					n++
				}
			}
			return nil
		})
	if err != nil {
		return n, fmt.Errorf("error removing %s: %w", l.raw, gcsError(err))
	}
	return n, nil
}

// parseFolder parses the location of a folder: as parse does, but a gs://
// location may name a whole bucket (gs://bucket), and its key, when it has
// one, is returned with a '/' at its end, the prefix of what it holds.
func (o *Opener) parseFolder(raw string) (location, error) {
	raw = strings.TrimSuffix(raw, "/")
	if u, err := url.Parse(raw); err == nil && u.Scheme == "gs" && strings.Trim(u.Path, "/") == "" {
		if u.Host == "" {
			return location{}, fmt.Errorf("%w: %s: want gs://bucket/folder", ErrInvalid, raw)
		}
		return location{scheme: "gs", raw: raw, bucket: u.Host}, nil
	}
	if len(o.cfg.LocalRoots) > 0 && climbs(raw) {
		return location{}, fmt.Errorf("%w: %s has a '..' segment: name the folder from the root down", ErrInvalid, raw)
	}
	l, err := o.parse(raw)
	if err != nil {
		return location{}, err
	}
	switch l.scheme {
	case "http", "https":
		return location{}, fmt.Errorf("%w: %s: http(s) locations cannot be listed, want gs:// or file://", ErrInvalid, raw)
	case "gs":
		l.key = path.Clean(l.key) + "/"
	}
	return l, nil
}

// readLocalFolder reads a local folder's entries, through an os.Root of
// its allowed folder when roots are set.
func (o *Opener) readLocalFolder(l location) ([]fs.DirEntry, error) {
	if l.root == "" {
		return os.ReadDir(l.path)
	}
	root, err := os.OpenRoot(l.root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return fs.ReadDir(root.FS(), filepath.ToSlash(l.rel))
}

// walkLocal calls fn for everything under a local folder (through an
// os.Root of its allowed folder when roots are set).
func (o *Opener) walkLocal(l location, fn func(string, fs.DirEntry)) error {
	fsys, closeFS, err := o.localFS(l)
	if err != nil {
		return err
	}
	defer closeFS()
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fn(p, d)
		return nil
	})
}

// localFS returns the file system of a local folder: an os.Root's when
// roots are set, so no link leads out of them.
func (o *Opener) localFS(l location) (fs.FS, func(), error) {
	if l.root == "" {
		if _, err := os.Stat(l.path); err != nil {
			return nil, nil, err
		}
		return os.DirFS(l.path), func() {}, nil
	}
	root, err := os.OpenRoot(l.root)
	if err != nil {
		return nil, nil, err
	}
	sub, err := root.OpenRoot(l.rel)
	if err != nil {
		_ = root.Close()
		return nil, nil, err
	}
	return sub.FS(), func() { _ = sub.Close(); _ = root.Close() }, nil
}

// removeLocal removes a local folder and what it holds (through an os.Root
// of its allowed folder when roots are set).
func (o *Opener) removeLocal(l location) error {
	if l.root == "" {
		return os.RemoveAll(l.path)
	}
	root, err := os.OpenRoot(l.root)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.RemoveAll(l.rel)
}
