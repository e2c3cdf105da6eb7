// Package objio opens the files that tasks read and write, by location: a
// local path, an http:// or https:// URL (read only), or a bucket object,
// gs://bucket/key on Cloud Storage (its JSON API) or file:///path on the
// local disk. Readers and writers stream: nothing holds a whole object, and
// a written object appears only once complete.
package objio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	storage "google.golang.org/api/storage/v1"
)

// Errors that callers tell apart (all are wrapped with the location).
var (
	// ErrInvalid: the location is malformed or uses an unsupported scheme.
	ErrInvalid = errors.New("invalid location")
	// ErrNotFound: nothing exists at the location.
	ErrNotFound = errors.New("not found")
	// ErrForbidden: the location is outside the allowed local folders, or
	// the server refused access.
	ErrForbidden = errors.New("access refused")
)

// Config says how locations are reached. The zero value reads and writes
// anything: local paths, any URL, Cloud Storage with Application Default
// Credentials.
type Config struct {
	// LocalRoots, when not empty, are the only folders whose files local
	// paths and file:// URLs may name (relative paths resolve against the
	// first). A service that takes locations from clients sets it, so a
	// client cannot make it read or overwrite any file of the host. Links
	// are followed before the check: a link inside a root that points out
	// of every root is refused.
	LocalRoots []string
	// RootsHint, when not empty, ends the refusal of a location outside
	// LocalRoots, to say how to allow it (wf: "set files.local_roots").
	RootsHint string
	// GCSEndpoint is the Cloud Storage JSON API endpoint of an emulator
	// (http://127.0.0.1:4443/storage/v1/), reached without credentials;
	// empty means the emulator STORAGE_EMULATOR_HOST names, if set, else
	// Google's, with Application Default Credentials.
	GCSEndpoint string
	// HTTPClient fetches http(s) locations; nil means http.DefaultClient.
	// Requests carry the caller's context, which bounds them.
	HTTPClient *http.Client
}

// Opener opens locations as its Config allows. It is safe for concurrent
// use; its Cloud Storage client is built on first use and needs no closing.
type Opener struct {
	cfg Config

	gcsMu      sync.Mutex
	gcsService *storage.Service // nil until the first gs:// location
}

// New returns an opener for cfg.
func New(cfg Config) *Opener { return &Opener{cfg: cfg} }

// location is a parsed location.
type location struct {
	scheme string // "", "http", "https", "gs" or "file"
	raw    string
	bucket string // gs: the bucket
	key    string // gs: the object key
	path   string // "" and file: the local path
}

// parse recognises a location's kind.
func (o *Opener) parse(raw string) (location, error) {
	if raw == "" {
		return location{}, fmt.Errorf("%w: the location is empty", ErrInvalid)
	}
	i := strings.Index(raw, "://")
	if i < 0 {
		p, err := o.localPath(raw)
		if err != nil {
			return location{}, err
		}
		return location{raw: raw, path: p}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return location{}, fmt.Errorf("%w: %s: %v", ErrInvalid, raw, err)
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return location{}, fmt.Errorf("%w: %s has no host", ErrInvalid, raw)
		}
		return location{scheme: u.Scheme, raw: raw}, nil
	case "gs":
		key := strings.TrimPrefix(u.Path, "/")
		if u.Host == "" || key == "" || strings.HasSuffix(key, "/") {
			return location{}, fmt.Errorf("%w: %s: want gs://bucket/path/to/object", ErrInvalid, raw)
		}
		return location{scheme: "gs", raw: raw, bucket: u.Host, key: key}, nil
	case "file":
		if (u.Host != "" && u.Host != "localhost") || !path.IsAbs(u.Path) || strings.HasSuffix(u.Path, "/") {
			return location{}, fmt.Errorf("%w: %s: want file:///absolute/path/to/file", ErrInvalid, raw)
		}
		p, err := o.localPath(filepath.FromSlash(u.Path))
		if err != nil {
			return location{}, err
		}
		return location{scheme: "file", raw: raw, path: p}, nil
	}
	return location{}, fmt.Errorf("%w: %s: scheme %q is not supported, want a local path, http(s)://, gs:// or file://", ErrInvalid, raw, u.Scheme)
}

// localPath cleans p and checks it against the allowed roots, after
// following the links of the part of it that exists. It returns the path
// with those links resolved, so what is opened is what was checked.
func (o *Opener) localPath(p string) (string, error) {
	if len(o.cfg.LocalRoots) == 0 {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %v", ErrInvalid, p, err)
		}
		return abs, nil
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(o.cfg.LocalRoots[0], p)
	}
	p, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrInvalid, p, err)
	}
	resolved, err := resolveLinks(p)
	if err != nil {
		return "", fmt.Errorf("error resolving %s: %w", p, osError(err))
	}
	for _, root := range o.cfg.LocalRoots {
		root, err := filepath.Abs(root)
		if err != nil {
			continue
		}
		if resolvedRoot, err := resolveLinks(root); err == nil && within(resolvedRoot, resolved) {
			return resolved, nil
		}
	}
	shown := p
	if resolved != p {
		shown = fmt.Sprintf("%s (a link to %s)", p, resolved)
	}
	hint := ""
	if o.cfg.RootsHint != "" {
		hint = "; " + o.cfg.RootsHint
	}
	return "", fmt.Errorf("%w: %s is outside the allowed folders (%s)%s", ErrForbidden, shown, strings.Join(o.cfg.LocalRoots, ", "), hint)
}

// within reports whether the clean absolute path p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// maxLinks bounds the links followed in one path, as the kernel does.
const maxLinks = 40

// resolveLinks returns the clean absolute path p with every link of its
// existing part followed; what does not exist yet is kept as written. A
// dangling link is followed to its target too, since a write to it may
// land there.
func resolveLinks(p string) (string, error) {
	var rest []string // the missing tail of p, innermost last
	for links := 0; ; {
		resolved, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{resolved}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", err
		}
		// p itself may be a dangling link: follow it by hand.
		if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if links++; links > maxLinks {
				return "", fmt.Errorf("%s: too many links", p)
			}
			target, err := os.Readlink(p)
			if err != nil {
				return "", err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(p), target)
			}
			p = filepath.Clean(target)
			continue
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...), nil
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// Open returns a reader of the object at loc. Close it when done.
func (o *Opener) Open(ctx context.Context, loc string) (io.ReadCloser, error) {
	l, err := o.parse(loc)
	if err != nil {
		return nil, err
	}
	switch l.scheme {
	case "http", "https":
		return o.openHTTP(ctx, loc)
	case "gs":
		return o.openGCS(ctx, l)
	}
	f, err := os.Open(l.path)
	if err != nil {
		return nil, fmt.Errorf("error opening %s: %w", loc, osError(err))
	}
	return f, nil
}

// openHTTP fetches an http(s) URL.
func (o *Opener) openHTTP(ctx context.Context, loc string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, loc, err)
	}
	c := o.cfg.HTTPClient
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("error fetching %s: %w", loc, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp.Body, nil
	}
	_ = resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotFound, http.StatusGone:
		return nil, fmt.Errorf("error fetching %s: %s: %w", loc, resp.Status, ErrNotFound)
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, fmt.Errorf("error fetching %s: %s: %w", loc, resp.Status, ErrForbidden)
	}
	if resp.StatusCode/100 == 4 {
		return nil, fmt.Errorf("error fetching %s: %s: %w", loc, resp.Status, ErrInvalid)
	}
	return nil, fmt.Errorf("error fetching %s: %s", loc, resp.Status)
}

// osError adds the package's sentinels to file-system errors.
func osError(err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%w: %w", ErrForbidden, err)
	}
	return err
}
