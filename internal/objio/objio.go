// Package objio opens the files that tasks read and write, by location: a
// local path, an http:// or https:// URL (read only), or a bucket object,
// gs://bucket/key on Cloud Storage (its JSON API) or file:///path on the
// local disk. Readers and writers stream: nothing holds a whole object, and
// a written object appears only once complete.
//
// When Config.LocalRoots is set, a local file is opened and created through
// an os.Root of the allowed folder that holds it, by its path relative to
// that folder: a link that someone swaps into the path after it was checked
// cannot lead out of the folder, the read or write is refused with
// ErrForbidden.
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
	"regexp"
	"strings"
	"sync"
	"syscall"

	storage "google.golang.org/api/storage/v1"

	"github.com/wfhq/wf/internal/egress"
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
// anything: local paths, any public URL (special-purpose addresses are
// refused unless HTTPClient allows them), Cloud Storage with Application Default
// Credentials.
type Config struct {
	// LocalRoots, when not empty, are the only folders whose files local
	// paths and file:// URLs may name (relative paths resolve against the
	// first). A service that takes locations from clients sets it, so a
	// client cannot make it read or overwrite any file of the host. Links
	// are followed before the check: a link inside a root that points out
	// of every root is refused. The file is then opened, and written, its
	// folders created and the finished file renamed into place, through an
	// os.Root of the root that holds it, so a link created or swapped in
	// after the check cannot lead out of that root either: the operation
	// fails with ErrForbidden. A root missing when a file is first written
	// in it is created.
	LocalRoots []string
	// RootsHint, when not empty, ends the refusal of a location outside
	// LocalRoots, to say how to allow it (wf: "set files.local_roots").
	RootsHint string
	// GCSEndpoint is the Cloud Storage JSON API endpoint of an emulator
	// (http://127.0.0.1:4443/storage/v1/), reached without credentials;
	// empty means the emulator STORAGE_EMULATOR_HOST names, if set, else
	// Google's, with Application Default Credentials.
	GCSEndpoint string
	// HTTPClient fetches http(s) locations; nil means a client that refuses
	// loopback, private, link-local and other special-purpose addresses
	// (egress.NewPolicy(nil)). Requests carry the caller's context, which
	// bounds them.
	HTTPClient *http.Client
}

// Opener opens locations as its Config allows. It is safe for concurrent
// use; its Cloud Storage client is built on first use and needs no closing.
type Opener struct {
	cfg Config
	// tenant, when set, names the tenant whose folder under each root is
	// this opener's root (see Tenant); errors then name paths relative to
	// that folder, never the server's own paths.
	tenant string

	storage *gcsClient // shared by an opener and its tenants' openers

	// checked, when set (by tests only), runs between the check of a local
	// location and its open: the window where a racing writer would swap
	// a folder of the path for a link.
	checked func(location)
}

// gcsClient is the Cloud Storage client, built on first use.
type gcsClient struct {
	mu      sync.Mutex
	service *storage.Service // nil until the first gs:// location
}

// New returns an opener for cfg.
func New(cfg Config) *Opener { return &Opener{cfg: cfg, storage: &gcsClient{}} }

// Or is o, or, when o is nil, an Opener with the zero Config (it reaches
// every location): the default of a handler given none.
func Or(o *Opener) *Opener {
	if o == nil {
		return New(Config{})
	}
	return o
}

// SystemTenant is the tenant of platform tasks (schema_name "system"): its
// files live in the folder of that name under each root, which no catalog
// can take (the name is reserved).
const SystemTenant = "system"

// tenantRE is the rule of a tenant's folder name: a schema name (catalogs'
// schema names and "system"), which is a plain folder name, of at most
// maxTenant bytes (checked apart: a counted repetition such as {0,62}
// compiles to a program ~60 times larger, kept by every wf process).
var tenantRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// maxTenant is the longest schema name (PostgreSQL's identifiers).
const maxTenant = 63

// Tenant returns the opener of one tenant's files (name is the tenant's
// schema_name): its roots are the folder name under each of o's roots, so
// local paths and file:// URLs may name only that tenant's files, a
// relative path resolves inside its folder under the first root, and a
// link leading out of the folder, into another tenant's or anywhere else,
// is refused like any location outside the roots. Its errors name paths
// relative to the tenant's folder, never the server's folders. http(s)
// and gs:// locations are reached as o reaches them. Without roots (the
// zero Config), o itself is returned: every path is allowed.
func (o *Opener) Tenant(name string) (*Opener, error) {
	if len(name) > maxTenant || !tenantRE.MatchString(name) {
		return nil, fmt.Errorf("%w: tenant %q is not a schema name", ErrInvalid, name)
	}
	if len(o.cfg.LocalRoots) == 0 {
		return o, nil
	}
	cfg := o.cfg
	cfg.LocalRoots = make([]string, len(o.cfg.LocalRoots))
	for i, root := range o.cfg.LocalRoots {
		cfg.LocalRoots[i] = filepath.Join(root, name)
	}
	return &Opener{cfg: cfg, tenant: name, storage: o.storage, checked: o.checked}, nil
}

// Check reports whether loc is a location this opener may read or write,
// without touching it: a well-formed http(s)://, gs:// or file:// URL or
// local path, and a local one inside the roots once its links are
// followed. With roots set, whatever the scheme, a ".." segment is
// refused, written out or percent-encoded: a location never climbs out of
// where it points. It is the check made when a task is submitted; opening
// the file checks again.
func (o *Opener) Check(loc string) error {
	if len(o.cfg.LocalRoots) > 0 && climbs(loc) {
		return fmt.Errorf("%w: %s has a '..' segment (or a percent-encoded one): name the file from the folder down", ErrInvalid, loc)
	}
	_, err := o.parse(loc)
	return err
}

// CheckFile checks loc as tenant's opener would (Tenant, then Check): the
// check made when a task naming a file is created.
func (o *Opener) CheckFile(tenant, loc string) error {
	t, err := o.Tenant(tenant)
	if err != nil {
		return err
	}
	return t.Check(loc)
}

// climbs reports whether loc has a ".." segment, as written or once
// percent-decoded (once or twice: %252e%252e decodes to %2e%2e).
func climbs(loc string) bool {
	for range 3 {
		for seg := range strings.FieldsFuncSeq(loc, func(r rune) bool { return r == '/' || r == '\\' }) {
			if seg == ".." {
				return true
			}
		}
		dec, err := url.PathUnescape(loc)
		if err != nil || dec == loc {
			return false
		}
		loc = dec
	}
	return false
}

// location is a parsed location.
type location struct {
	scheme string // "", "http", "https", "gs" or "file"
	raw    string
	bucket string // gs: the bucket
	key    string // gs: the object key
	path   string // "" and file: the local path, absolute
	root   string // "" and file: the allowed folder holding path, links resolved; "" when any path is allowed
	rel    string // "" and file: path relative to root, when root is set
}

// parse recognises a location's kind.
func (o *Opener) parse(raw string) (location, error) {
	if raw == "" {
		return location{}, fmt.Errorf("%w: the location is empty", ErrInvalid)
	}
	i := strings.Index(raw, "://")
	if i < 0 {
		p, root, rel, err := o.localPath(raw, raw)
		if err != nil {
			return location{}, err
		}
		return location{raw: raw, path: p, root: root, rel: rel}, nil
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
		p, root, rel, err := o.localPath(raw, filepath.FromSlash(u.Path))
		if err != nil {
			return location{}, err
		}
		return location{scheme: "file", raw: raw, path: p, root: root, rel: rel}, nil
	}
	return location{}, fmt.Errorf("%w: %s: scheme %q is not supported, want a local path, http(s)://, gs:// or file://", ErrInvalid, raw, u.Scheme)
}

// localPath cleans p and checks it against the allowed roots, after
// following the links of the part of it that exists. It returns the path
// with those links resolved, and, when roots are set, the root holding it
// (links resolved too) and the path relative to that root, by which the
// file is opened through an os.Root. Resolving the links first lets a path
// reach its file through an absolute link, or a link from one root into
// another, which os.Root refuses; what os.Root then walks has no links
// unless one was swapped in since, and that one may not leave the root.
// raw is the location as given, which a tenant's refusals name.
func (o *Opener) localPath(raw, p string) (string, string, string, error) {
	if len(o.cfg.LocalRoots) == 0 {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", "", "", fmt.Errorf("%w: %s: %v", ErrInvalid, p, err)
		}
		return abs, "", "", nil
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(o.cfg.LocalRoots[0], p)
	}
	p, err := filepath.Abs(p)
	if err != nil {
		return "", "", "", fmt.Errorf("%w: %s: %v", ErrInvalid, p, err)
	}
	resolved, err := resolveLinks(p)
	if err != nil {
		return "", "", "", fmt.Errorf("error resolving %s: %w", o.show(p), osError(err))
	}
	for _, root := range o.cfg.LocalRoots {
		root, err := filepath.Abs(root)
		if err != nil {
			continue
		}
		resolvedRoot, err := resolveLinks(root)
		if err != nil || !within(resolvedRoot, resolved) {
			continue
		}
		rel, err := filepath.Rel(resolvedRoot, resolved)
		if err != nil {
			return "", "", "", fmt.Errorf("%w: %s: %v", ErrInvalid, p, err)
		}
		return resolved, resolvedRoot, rel, nil
	}
	if o.tenant != "" {
		// As the client wrote it: nothing of the server's folders.
		shown := raw
		if resolved != p {
			shown += " (through a link leading out of the folder)"
		}
		return "", "", "", o.outside(shown)
	}
	shown := p
	if resolved != p {
		shown = fmt.Sprintf("%s (a link to %s)", p, resolved)
	}
	return "", "", "", o.outside(shown)
}

// show is how errors name the absolute local path p: as it is, or, for a
// tenant's opener, relative to the tenant's folder ("a path outside the
// tenant's folder" when it is not inside), so that what a client reads
// reveals nothing of the server's folders.
func (o *Opener) show(p string) string {
	if o.tenant == "" {
		return p
	}
	for _, root := range o.cfg.LocalRoots {
		if rel, err := filepath.Rel(root, p); err == nil && within(root, p) {
			return filepath.ToSlash(rel)
		}
		if resolved, err := resolveLinks(root); err == nil && within(resolved, p) {
			rel, _ := filepath.Rel(resolved, p)
			return filepath.ToSlash(rel)
		}
	}
	return "a path outside the tenant's folder"
}

// outside is the refusal of the local path shown, outside every root.
func (o *Opener) outside(shown string) error {
	if o.tenant != "" {
		return fmt.Errorf("%w: %s is outside the files of tenant %s: name a file inside its folder", ErrForbidden, shown, o.tenant)
	}
	hint := ""
	if o.cfg.RootsHint != "" {
		hint = "; " + o.cfg.RootsHint
	}
	return fmt.Errorf("%w: %s is outside the allowed folders (%s)%s", ErrForbidden, shown, strings.Join(o.cfg.LocalRoots, ", "), hint)
}

// rootError adds the package's sentinels to an error of an operation on
// the local path p through root: a name that os.Root refuses because it
// leads out of the root (a link swapped in after the check) is forbidden.
func (o *Opener) rootError(root *os.Root, p string, err error) error {
	if isEscape(root, err) {
		return fmt.Errorf("%w: %w", o.outside(o.show(p)+" (through a link)"), err)
	}
	return osError(err)
}

// isEscape reports whether err is os.Root's refusal of a name leading out
// of root. That error is not exported (golang/go#74640), so it is taken
// from root itself: ".." always leads out, as os.Root decides from the name
// alone, before any system call.
func isEscape(root *os.Root, err error) bool {
	_, escape := root.Lstat("..")
	var pe *fs.PathError
	return errors.As(escape, &pe) && errors.Is(err, pe.Err)
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
	return o.openLocal(l)
}

// openLocal opens a local file: through an os.Root of its root when roots
// are set, so that no link leads out of that root, else by its path.
func (o *Opener) openLocal(l location) (*os.File, error) {
	if o.checked != nil {
		o.checked(l)
	}
	if l.root == "" {
		f, err := os.Open(l.path)
		if err != nil {
			return nil, fmt.Errorf("error opening %s: %w", l.raw, osError(err))
		}
		return f, nil
	}
	root, err := os.OpenRoot(l.root)
	if err != nil {
		return nil, fmt.Errorf("error opening %s: error opening its folder %s: %w", l.raw, o.show(l.root), osError(err))
	}
	defer root.Close()
	f, err := root.Open(l.rel)
	if err != nil {
		return nil, fmt.Errorf("error opening %s: %w", l.raw, o.rootError(root, l.path, err))
	}
	return f, nil
}

// strictClient is the default HTTP client: the egress policy with nothing
// allow-listed.
var strictClient = sync.OnceValue(func() *http.Client {
	p, _ := egress.NewPolicy(nil) // no allow-list: cannot fail
	return p.Client(0)
})

// openHTTP fetches an http(s) URL.
func (o *Opener) openHTTP(ctx context.Context, loc string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, loc, err)
	}
	c := o.cfg.HTTPClient
	if c == nil {
		c = strictClient()
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
