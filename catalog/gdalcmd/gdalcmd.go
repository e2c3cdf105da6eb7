// Package gdalcmd runs GDAL's command-line tools (ogr2ogr, ogrinfo,
// gdalinfo, gdaltransform) for the catalog's task types, the one way: on a
// copy of the source staged in a scratch folder of the task's tenant, as a
// child process in its own process group that a cancelled or timed-out task
// kills, with an environment that holds none of wf's secrets and switches
// off the drivers that follow references to other files or URLs, and with
// GDAL's errors turned into words a user can act on.
//
// Why the commands rather than GDAL's C API through cgo: wf stays a static,
// cgo-free binary; a crash or a leak in a driver stays in a child process,
// which one signal to its process group stops; and the commands are what
// operators already know and can rerun by hand.
package gdalcmd

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/wftype"
)

// MaxStderr bounds what is kept of a GDAL command's error output.
const MaxStderr = 64 << 10

// shapefileSidecars are the files read beside a .shp.
var shapefileSidecars = []string{".shx", ".dbf", ".prj", ".cpg"}

// Require returns a (retryable) error naming the package to install when
// the GDAL tool name is not on this worker: the worker lacks GDAL, not the
// request, so the task is retried and dead-lettered for a person if no
// worker has it.
func Require(name string) error {
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("GDAL's %s is not installed on this worker: install GDAL (Debian: apt-get install gdal-bin; `make postgres` does it)", name)
	}
	return nil
}

// env is a GDAL command's whole environment: nothing of wf's (no database
// URL, no credentials), and the drivers and options that reach other files
// or the network switched off.
func env(scratch string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + scratch,
		"LC_ALL=C",
		"GDAL_SKIP=VRT OGR_VRT",
		"GML_SKIP_RESOLVE_ELEMS=ALL",
		"GML_DOWNLOAD_WFS_SCHEMA=NO",
		"GDAL_HTTP_TIMEOUT=1",
		"CPL_VSIL_CURL_ALLOWED_EXTENSIONS=.none",
		"GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR",
	}
}

// Command prepares a GDAL command run in dir, in its own process group,
// killed as a group when ctx ends (a cancelled task or a timeout).
func Command(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env(dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Output runs a GDAL command on staged source s and returns its standard
// output; stdin, when not nil, must end (a file, or a reader of a known
// text). A failure is explained by Explain (permanent when GDAL refused
// the source); a cancelled ctx gives "GDAL was stopped" with its cause,
// not permanent.
func Output(ctx context.Context, s *Staged, stdin io.Reader, name string, args ...string) ([]byte, error) {
	cmd := Command(ctx, s.Dir, name, args...)
	stderr := &LimitedBuffer{Max: MaxStderr}
	cmd.Stderr = stderr
	cmd.Stdin = stdin
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("GDAL was stopped: %w", context.Cause(ctx))
		}
		// GDAL says why on either stream.
		return nil, Explain(stderr.String()+"\n"+string(out), s.Path, s.Shown, err)
	}
	return out, nil
}

// messages map what GDAL says to what the user should do.
var messages = []struct {
	contains string
	say      string
}{
	{"Unable to open datasource", "GDAL cannot read it: it is not in a vector format GDAL knows, or it is damaged"},
	{"not recognized as a supported file format", "GDAL cannot read it: it is not in a format GDAL knows, or it is damaged"},
	{"has no coordinate system", `it has no coordinate reference system: name it in "source_crs" (e.g. "EPSG:32632")`},
	{"Couldn't fetch requested layer", `it has no layer of that name (see "layer")`},
	{"Failed to process SRS definition", `"source_crs" is not a coordinate reference system GDAL knows`},
	{"Failed to create coordinate transformation", "GDAL cannot reproject it to WGS84 (EPSG:4326): check its CRS or \"source_crs\""},
}

// Explain builds the error of a failed GDAL command from its standard
// error, with the staged path replaced by the name the user gave (shown).
// The error is permanent: GDAL refused the source or the request.
func Explain(stderr, staged, shown string, werr error) error {
	// GDAL wraps long messages over lines: read them as one text. A
	// driver list ("  -> GPKG") says nothing to a user.
	var words []string
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "Warning") || strings.HasPrefix(l, "-> ") {
			continue
		}
		for _, p := range []string{"ERROR 1: ", "ERROR 4: ", "ERROR 6: ", "ERROR 10: ", "FAILURE: ", "FAILURE:"} {
			l = strings.TrimPrefix(l, p)
		}
		words = append(words, strings.Fields(l)...)
	}
	detail := strings.Join(words, " ")
	if staged != "" {
		// The path GDAL opened (/vsizip/ and the copy), then the copy.
		detail = strings.ReplaceAll(detail, staged, shown)
		detail = strings.ReplaceAll(detail, strings.TrimPrefix(strings.TrimPrefix(staged, "/vsizip/"), "/vsigzip/"), shown)
	}
	for _, m := range messages {
		if strings.Contains(detail, m.contains) {
			return wftype.Permanent(fmt.Errorf("%s (GDAL: %s)", m.say, detail))
		}
	}
	if detail == "" {
		detail = werr.Error()
	}
	return wftype.Permanent(fmt.Errorf("GDAL: %s", detail))
}

// Staged is a source copied into a scratch folder for GDAL to read.
type Staged struct {
	// Dir is the scratch folder, removed by Remove.
	Dir string
	// File is the local copy of the source.
	File string
	// Path is what GDAL opens: the copy, or /vsizip/ or /vsigzip/ and the
	// copy for a .zip or .gz.
	Path string
	// Shown is the source as the user named it, for messages.
	Shown string
}

// Remove deletes the scratch folder.
func (s *Staged) Remove() error { return os.RemoveAll(s.Dir) }

// Stager copies sources, under objio's rules, into scratch folders of
// their tenant.
type Stager struct {
	// Objects opens sources.
	Objects *objio.Opener
	// ScratchDir holds a folder per tenant; "" means
	// <os temp dir>/wf-scratch.
	ScratchDir string
}

// Stage copies source (and a Shapefile's sidecar files) into a new scratch
// folder of tenant schema, named prefix-*. A source objio refuses or cannot
// find fails permanently.
func (st Stager) Stage(ctx context.Context, schema, prefix, source string) (*Staged, error) {
	base := filepath.Join(cmp.Or(st.ScratchDir, filepath.Join(os.TempDir(), "wf-scratch")), schema)
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, fmt.Errorf("error creating the scratch folder %s: %w", base, err)
	}
	dir, err := os.MkdirTemp(base, prefix+"-*")
	if err != nil {
		return nil, fmt.Errorf("error creating a scratch folder in %s: %w", base, err)
	}
	s := &Staged{Dir: dir, Shown: source}
	if s.File, s.Path, err = st.stage(ctx, dir, source); err != nil {
		_ = s.Remove()
		return nil, err
	}
	return s, nil
}

// stage copies the source (and a Shapefile's sidecars) into dir and returns
// the copy and the path GDAL opens.
func (st Stager) stage(ctx context.Context, dir, source string) (file, open string, err error) {
	ext := sourceExt(source)
	name := stagedName(source, ext)
	dst := filepath.Join(dir, name+ext)
	if err := st.copyObject(ctx, source, dst); err != nil {
		return "", "", err
	}
	if ext == ".shp" && strings.HasSuffix(strings.ToLower(source), ext) {
		stem := strings.TrimSuffix(source, source[len(source)-len(ext):])
		for _, side := range shapefileSidecars {
			err := st.copyObject(ctx, stem+side, filepath.Join(dir, name+side))
			if err != nil && !errors.Is(err, objio.ErrNotFound) {
				return "", "", err
			}
		}
	}
	switch ext {
	case ".zip":
		return dst, "/vsizip/" + dst, nil
	case ".gz":
		return dst, "/vsigzip/" + dst, nil
	}
	return dst, dst, nil
}

// stagedName is the name, without its extension ext, of the scratch copy
// of source: the source's own file name when it is a plain one (letters,
// digits, '.', '_', '-', not starting with '.' or '-', at most 100 bytes),
// else "source". GDAL names the layer of a one-layer file (GeoJSON, CSV, a
// Shapefile) after its file, so the layers described and read are named as
// the user's file is, not after wf's copy.
func stagedName(source, ext string) string {
	p := source
	if u, err := url.Parse(source); err == nil && u.Scheme != "" {
		p = u.Path
	}
	base := path.Base(p)
	if ext != "" && strings.EqualFold(path.Ext(base), ext) {
		base = base[:len(base)-len(ext)]
	}
	if !plainName.MatchString(base) {
		return "source"
	}
	return base
}

// plainName is a file name stagedName keeps.
var plainName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$`)

// sourceExt returns the lower-case extension of the source's file name
// (for a URL, of its path), which GDAL's drivers recognise; "" when it has
// none GDAL could use.
func sourceExt(loc string) string {
	p := loc
	if u, err := url.Parse(loc); err == nil && u.Scheme != "" {
		p = u.Path
	}
	ext := strings.ToLower(path.Ext(p))
	if len(ext) < 2 || len(ext) > 10 || strings.Trim(ext[1:], "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		return ""
	}
	return ext
}

// copyObject copies one object to a local file, under objio's rules.
func (st Stager) copyObject(ctx context.Context, loc, dst string) error {
	r, err := st.Objects.Open(ctx, loc)
	if err != nil {
		if errors.Is(err, objio.ErrInvalid) || errors.Is(err, objio.ErrNotFound) || errors.Is(err, objio.ErrForbidden) {
			return wftype.Permanent(err)
		}
		return err
	}
	defer r.Close()
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("error staging %s: %w", loc, err)
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("error staging %s: %w", loc, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("error staging %s: %w", loc, err)
	}
	return nil
}

// LimitedBuffer keeps the first Max bytes written to it.
type LimitedBuffer struct {
	buf bytes.Buffer
	// Max is how many bytes are kept.
	Max int
}

// Write implements io.Writer; it never fails.
func (b *LimitedBuffer) Write(p []byte) (int, error) {
	if room := b.Max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// String returns what was kept.
func (b *LimitedBuffer) String() string { return b.buf.String() }
