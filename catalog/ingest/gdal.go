package ingest

import (
	"bufio"
	"bytes"
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

// GDAL sources. Any vector format GDAL reads (Shapefile, zipped Shapefile,
// GeoPackage, FlatGeobuf, KML, GML, GPX, GeoJSON, CSV, …) is ingested by
// running GDAL's ogr2ogr, which reprojects to WGS84 and writes GeoJSON
// features, one per line, to its standard output; that stream is read by
// the NDJSON reader and goes through the same per-record pipeline as every
// other format (checks, stats, hashes, versions, envelopes).
//
// Why the ogr2ogr command rather than GDAL's C API through cgo: wf stays a
// static, cgo-free binary; a crash or a leak in a driver stays in a child
// process, which cancellation and timeouts stop with one signal to its
// process group; and the command is what operators already know and can
// rerun by hand. The cost is one GeoJSON encoding and decoding per feature.
//
// GDAL never sees the caller's location: the source (a local path inside
// files.local_roots, an http(s) URL or a gs:// object) is copied through
// objio, under its rules, into a scratch folder of the task's tenant, with
// a Shapefile's sidecar files (.shx, .dbf, .prj, .cpg); ogr2ogr reads that
// copy (a .zip through /vsizip/), with the drivers that follow references
// to other files or URLs (VRT) switched off and an environment that holds
// none of wf's secrets.

// gdalCoordinatePrecision is the decimals ogr2ogr writes: 1e-9 degrees is
// about 0.1 mm.
const gdalCoordinatePrecision = "9"

// maxGDALStderr bounds what is kept of GDAL's error output.
const maxGDALStderr = 64 << 10

// sourceCRSRE accepts an authority and code (EPSG:32632, ESRI:102100):
// never a file name or URL, which GDAL would otherwise open.
var sourceCRSRE = regexp.MustCompile(`^(EPSG|ESRI|IAU_2015|OGC):[0-9A-Za-z_.]{1,32}$`)

// shapefileSidecars are the files read beside a .shp.
var shapefileSidecars = []string{".shx", ".dbf", ".prj", ".cpg"}

// gdalEnv is ogr2ogr's whole environment: nothing of wf's (no database URL,
// no credentials), and the drivers and options that reach other files or
// the network switched off.
func gdalEnv(scratch string) []string {
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

// gdalSource is the stream of GeoJSON features an ogr2ogr run writes.
type gdalSource struct {
	ctx     context.Context
	cmd     *exec.Cmd
	stdout  io.ReadCloser
	stderr  *limitedBuffer
	scratch string
	shown   string // the source as the user named it, for messages
	staged  string // the staged path, replaced by shown in messages
	waited  bool
	err     error
}

// openGDAL stages the source in a scratch folder of tenant schema and
// starts ogr2ogr on it. Bad inputs and sources GDAL cannot open fail
// permanently.
func (h *Handler) openGDAL(ctx context.Context, schema string, in Inputs) (io.ReadCloser, error) {
	if _, err := exec.LookPath("ogr2ogr"); err != nil {
		// Not permanent: the worker lacks GDAL, not the request; the task is
		// retried and dead-lettered for a person if no worker has it.
		return nil, errors.New("GDAL's ogr2ogr is not installed on this worker: install GDAL (Debian: apt-get install gdal-bin; `make postgres` does it)")
	}
	base := filepath.Join(h.cfg.ScratchDir, schema)
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, fmt.Errorf("error creating the scratch folder %s: %w", base, err)
	}
	scratch, err := os.MkdirTemp(base, "ingest-*")
	if err != nil {
		return nil, fmt.Errorf("error creating a scratch folder in %s: %w", base, err)
	}
	src, err := h.stage(ctx, scratch, in)
	if err != nil {
		os.RemoveAll(scratch)
		return nil, err
	}
	layer := in.Layer
	if layer == "" {
		if layer, err = onlyLayer(ctx, scratch, src, in.Source); err != nil {
			os.RemoveAll(scratch)
			return nil, err
		}
	}
	args := []string{"-f", "GeoJSONSeq", "/vsistdout/", src, layer,
		"-t_srs", "EPSG:4326", "-dim", "XY",
		"-lco", "COORDINATE_PRECISION=" + gdalCoordinatePrecision, "-lco", "RS=NO"}
	if in.SourceCRS != "" {
		args = append(args, "-s_srs", in.SourceCRS)
	}
	g := &gdalSource{ctx: ctx, stderr: &limitedBuffer{max: maxGDALStderr}, scratch: scratch,
		shown: in.Source, staged: src}
	g.cmd = gdalCommand(ctx, scratch, "ogr2ogr", args...)
	g.cmd.Stderr = g.stderr
	if g.stdout, err = g.cmd.StdoutPipe(); err != nil {
		os.RemoveAll(scratch)
		return nil, fmt.Errorf("error starting ogr2ogr: %w", err)
	}
	if err := g.cmd.Start(); err != nil {
		os.RemoveAll(scratch)
		return nil, fmt.Errorf("error starting ogr2ogr: %w", err)
	}
	return g, nil
}

// gdalCommand prepares a GDAL command in its own process group, killed as
// a group when ctx ends (a cancelled task or a timeout).
func gdalCommand(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = gdalEnv(dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Read implements io.Reader: ogr2ogr's output, then, at its end, its exit
// status in words a user understands.
func (g *gdalSource) Read(p []byte) (int, error) {
	if g.waited {
		return 0, orEOF(g.err)
	}
	n, err := g.stdout.Read(p)
	if errors.Is(err, io.EOF) {
		g.waited = true
		if werr := g.cmd.Wait(); werr != nil {
			g.err = g.explain(werr)
		}
		return n, orEOF(g.err)
	}
	return n, err
}

// orEOF returns err when it is not nil, else io.EOF.
func orEOF(err error) error {
	if err != nil {
		return err
	}
	return io.EOF
}

// Close stops ogr2ogr if it still runs and removes the scratch folder.
func (g *gdalSource) Close() error {
	if !g.waited {
		g.waited = true
		_ = g.cmd.Process.Signal(syscall.SIGKILL)
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		_ = g.cmd.Wait()
	}
	return os.RemoveAll(g.scratch)
}

// explain turns a failed ogr2ogr run into an error a user can act on.
func (g *gdalSource) explain(werr error) error {
	if err := g.ctx.Err(); err != nil {
		return fmt.Errorf("GDAL was stopped: %w", context.Cause(g.ctx))
	}
	return gdalError(g.stderr.String(), g.staged, g.shown, werr)
}

// gdalMessages map what GDAL says to what the user should do.
var gdalMessages = []struct {
	contains string
	say      string
}{
	{"Unable to open datasource", "GDAL cannot read it: it is not in a vector format GDAL knows, or it is damaged"},
	{"not recognized as a supported file format", "GDAL cannot read it: it is not in a vector format GDAL knows, or it is damaged"},
	{"has no coordinate system", `it has no coordinate reference system: name it in "source_crs" (e.g. "EPSG:32632")`},
	{"Couldn't fetch requested layer", `it has no layer of that name (see "layer")`},
	{"Failed to process SRS definition", `"source_crs" is not a coordinate reference system GDAL knows`},
	{"Failed to create coordinate transformation", "GDAL cannot reproject it to WGS84 (EPSG:4326): check its CRS or \"source_crs\""},
}

// gdalError builds the error of a GDAL command from its standard error,
// with the staged path replaced by the name the user gave.
func gdalError(stderr, staged, shown string, werr error) error {
	// GDAL wraps long messages over lines: read them as one text.
	var words []string
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "Warning") {
			continue
		}
		for _, p := range []string{"ERROR 1: ", "ERROR 4: ", "ERROR 6: ", "ERROR 10: ", "FAILURE: "} {
			l = strings.TrimPrefix(l, p)
		}
		words = append(words, strings.Fields(l)...)
	}
	detail := strings.Join(words, " ")
	detail = strings.ReplaceAll(detail, "/vsizip/"+staged, shown)
	detail = strings.ReplaceAll(detail, "/vsigzip/"+staged, shown)
	detail = strings.ReplaceAll(detail, staged, shown)
	for _, m := range gdalMessages {
		if strings.Contains(detail, m.contains) {
			return wftype.Permanent(fmt.Errorf("%s (GDAL: %s)", m.say, detail))
		}
	}
	if detail == "" {
		detail = werr.Error()
	}
	return wftype.Permanent(fmt.Errorf("GDAL: %s", detail))
}

// layerLineRE matches one layer of `ogrinfo -ro -q`: "1: name (Polygon)".
var layerLineRE = regexp.MustCompile(`^\d+: (.+?)(?: \([^()]*\))?$`)

// onlyLayer returns the source's one layer, or a permanent error asking for
// "layer" when it has several (naming them) or saying it has none.
func onlyLayer(ctx context.Context, scratch, src, shown string) (string, error) {
	cmd := gdalCommand(ctx, scratch, "ogrinfo", "-ro", "-q", src)
	stderr := &limitedBuffer{max: maxGDALStderr}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("GDAL was stopped: %w", context.Cause(ctx))
		}
		// ogrinfo says why on either stream.
		return "", fmt.Errorf("error reading %s: %w", shown, gdalError(stderr.String()+"\n"+string(out), src, shown, err))
	}
	var layers []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := layerLineRE.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			layers = append(layers, m[1])
		}
	}
	switch len(layers) {
	case 0:
		return "", wftype.Permanent(fmt.Errorf("error reading %s with GDAL: it has no vector layer", shown))
	case 1:
		return layers[0], nil
	}
	return "", wftype.Permanent(fmt.Errorf(`error reading %s with GDAL: it has %d layers (%s): name one in "layer"`,
		shown, len(layers), strings.Join(layers, ", ")))
}

// stage copies the source (and a Shapefile's sidecars) into scratch and
// returns the path GDAL opens.
func (h *Handler) stage(ctx context.Context, scratch string, in Inputs) (string, error) {
	ext := sourceExt(in.Source)
	dst := filepath.Join(scratch, "source"+ext)
	if err := h.copyObject(ctx, in.Source, dst); err != nil {
		return "", err
	}
	if ext == ".shp" && strings.HasSuffix(strings.ToLower(in.Source), ext) {
		stem := strings.TrimSuffix(in.Source, in.Source[len(in.Source)-len(ext):])
		for _, side := range shapefileSidecars {
			err := h.copyObject(ctx, stem+side, filepath.Join(scratch, "source"+side))
			if err != nil && !errors.Is(err, objio.ErrNotFound) {
				return "", err
			}
		}
	}
	switch ext {
	case ".zip":
		return "/vsizip/" + dst, nil
	case ".gz":
		return "/vsigzip/" + dst, nil
	}
	return dst, nil
}

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
func (h *Handler) copyObject(ctx context.Context, loc, dst string) error {
	r, err := h.cfg.Objects.Open(ctx, loc)
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

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

// Write implements io.Writer; it never fails.
func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// String returns what was kept.
func (b *limitedBuffer) String() string { return b.buf.String() }
