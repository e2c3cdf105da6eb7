package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"syscall"

	"github.com/wfhq/wf/catalog/gdalcmd"
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
// The command rather than GDAL's C API, and how it is run, is catalog/gdalcmd's
// (static binary, a driver's crash stays in a child process); the cost is
// one GeoJSON encoding and decoding per feature.
//
// GDAL never sees the caller's location: the source (a local path inside
// files.local_roots, an http(s) URL or a gs:// object) is copied through
// objio, under its rules, into a scratch folder of the task's tenant, with
// a Shapefile's sidecar files (.shx, .dbf, .prj, .cpg); ogr2ogr reads that
// copy (a .zip through /vsizip/).

// gdalCoordinatePrecision is the decimals ogr2ogr writes: 1e-9 degrees is
// about 0.1 mm.
const gdalCoordinatePrecision = "9"

// sourceCRSRE accepts an authority and code (EPSG:32632, ESRI:102100):
// never a file name or URL, which GDAL would otherwise open.
var sourceCRSRE = regexp.MustCompile(`^(EPSG|ESRI|IAU_2015|OGC):[0-9A-Za-z_.]{1,32}$`)

// gdalSource is the stream of GeoJSON features an ogr2ogr run writes.
type gdalSource struct {
	ctx    context.Context
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr *gdalcmd.LimitedBuffer
	staged *gdalcmd.Staged
	waited bool
	err    error
}

// openGDAL stages the source in a scratch folder of tenant schema and
// starts ogr2ogr on it. Bad inputs and sources GDAL cannot open fail
// permanently.
func (h *Handler) openGDAL(ctx context.Context, objs *objio.Opener, schema string, in Inputs) (io.ReadCloser, error) {
	if err := gdalcmd.Require("ogr2ogr"); err != nil {
		return nil, err
	}
	staged, err := gdalcmd.Stager{Objects: objs, ScratchDir: h.cfg.ScratchDir}.Stage(ctx, schema, "ingest", in.Source)
	if err != nil {
		return nil, err
	}
	layer := in.Layer
	if layer == "" {
		if layer, err = onlyLayer(ctx, staged); err != nil {
			_ = staged.Remove()
			return nil, err
		}
	}
	args := []string{"-f", "GeoJSONSeq", "/vsistdout/", staged.Path, layer,
		"-t_srs", "EPSG:4326", "-dim", "XY",
		"-lco", "COORDINATE_PRECISION=" + gdalCoordinatePrecision, "-lco", "RS=NO"}
	if in.SourceCRS != "" {
		args = append(args, "-s_srs", in.SourceCRS)
	}
	g := &gdalSource{ctx: ctx, stderr: &gdalcmd.LimitedBuffer{Max: gdalcmd.MaxStderr}, staged: staged}
	g.cmd = gdalcmd.Command(ctx, staged.Dir, "ogr2ogr", args...)
	g.cmd.Stderr = g.stderr
	if g.stdout, err = g.cmd.StdoutPipe(); err != nil {
		_ = staged.Remove()
		return nil, fmt.Errorf("error starting ogr2ogr: %w", err)
	}
	if err := g.cmd.Start(); err != nil {
		_ = staged.Remove()
		return nil, fmt.Errorf("error starting ogr2ogr: %w", err)
	}
	return g, nil
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
	return g.staged.Remove()
}

// explain turns a failed ogr2ogr run into an error a user can act on.
func (g *gdalSource) explain(werr error) error {
	if err := g.ctx.Err(); err != nil {
		return fmt.Errorf("GDAL was stopped: %w", context.Cause(g.ctx))
	}
	return gdalcmd.Explain(g.stderr.String(), g.staged.Path, g.staged.Shown, werr)
}

// layerLineRE matches one layer of `ogrinfo -ro -q`: "1: name (Polygon)".
var layerLineRE = regexp.MustCompile(`^\d+: (.+?)(?: \([^()]*\))?$`)

// onlyLayer returns the source's one layer, or a permanent error asking for
// "layer" when it has several (naming them) or saying it has none.
func onlyLayer(ctx context.Context, s *gdalcmd.Staged) (string, error) {
	out, err := gdalcmd.Output(ctx, s, nil, "ogrinfo", "-ro", "-q", s.Path)
	if err != nil {
		if wftype.IsPermanent(err) {
			return "", wftype.Permanent(fmt.Errorf("error reading %s: %w", s.Shown, err))
		}
		return "", err
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
		return "", wftype.Permanent(fmt.Errorf("error reading %s with GDAL: it has no vector layer", s.Shown))
	case 1:
		return layers[0], nil
	}
	return "", wftype.Permanent(fmt.Errorf(`error reading %s with GDAL: it has %d layers (%s): name one in "layer"`,
		s.Shown, len(layers), strings.Join(layers, ", ")))
}
