package gdal

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/wfhq/wf/catalog/gdalcmd"
)

// The lines of `ogrinfo -ro -so -al -nomd -wkt_format WKT2` that the task
// reads. Names may hold ": " and parentheses, so every pattern anchors on
// what follows the name, which GDAL writes in a fixed form.
var (
	driverRE   = regexp.MustCompile("using driver `(.+)' successful")
	geometryRE = regexp.MustCompile(`^Geometry(?: \(.*\))?: (.+)$`)
	countRE    = regexp.MustCompile(`^Feature Count: (-?\d+)$`)
	extentRE   = regexp.MustCompile(`^Extent(?: \(.*\))?: \((\S+), (\S+)\) - \((\S+), (\S+)\)$`)
	// A field: "name: Type (width.precision)", then optional constraints.
	fieldRE = regexp.MustCompile(`^(.+): ([A-Za-z0-9]+(?:\([A-Za-z0-9]+\))?) \((\d+)\.(\d+)\)(.*)$`)
	// Lines of no interest that would otherwise read as fields.
	skipRE = regexp.MustCompile(`^(?:FID Column|Geometry Column(?: \d+)?) = |^Data axis to CRS axis mapping: |^INFO: |^Layer SRS WKT:$`)
)

// extentEdgePoints is how many points each edge of a layer's extent is
// cut into before it is brought to WGS84.
const extentEdgePoints = 16

// vectorLayer is a layer while it is read, with its extent in its own CRS.
type vectorLayer struct {
	Layer
	extent []float64
}

// readVector describes a vector source with ogrinfo, and brings each
// layer's extent to WGS84 with gdaltransform.
func readVector(ctx context.Context, s *gdalcmd.Staged) (Info, error) {
	out, err := gdalcmd.Output(ctx, s, nil, "ogrinfo", "-ro", "-so", "-al", "-nomd", "-wkt_format", "WKT2", s.Path)
	if err != nil {
		return Info{}, err
	}
	driver, layers, err := parseOgrinfo(out)
	if err != nil {
		return Info{}, fmt.Errorf("error reading ogrinfo's answer: %w", err)
	}
	info := Info{Kind: KindVector, Driver: driver, Layers: []Layer{}}
	var all bounds
	for _, l := range layers {
		if l.CRS != nil && len(l.extent) == 4 {
			if l.ExtentWGS84, err = toWGS84(ctx, s, l.CRS.WKT, l.extent); err != nil {
				return Info{}, err
			}
			all.union(l.ExtentWGS84)
		}
		if info.CRS == nil {
			info.CRS = l.CRS
		}
		info.Layers = append(info.Layers, l.Layer)
	}
	info.ExtentWGS84 = all.slice()
	return info, nil
}

// parseOgrinfo reads ogrinfo's summary of every layer.
func parseOgrinfo(out []byte) (driver string, layers []*vectorLayer, err error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var cur *vectorLayer
	blank := true // a layer starts after an empty line (a field may be called "Layer name")
	for sc.Scan() {
		line := sc.Text()
		wasBlank := blank
		blank = strings.TrimSpace(line) == ""
		if m := driverRE.FindStringSubmatch(line); m != nil && driver == "" {
			driver = m[1]
			continue
		}
		if name, ok := strings.CutPrefix(line, "Layer name: "); ok && wasBlank {
			cur = &vectorLayer{Layer: Layer{Name: name, FeatureCount: -1, Fields: []Field{}}}
			layers = append(layers, cur)
			continue
		}
		if cur == nil || blank {
			continue
		}
		if line == "Layer SRS WKT:" {
			wkt, err := readWKT(sc)
			if err != nil {
				return "", nil, fmt.Errorf("layer %q: %w", cur.Name, err)
			}
			if cur.CRS == nil {
				cur.CRS = newCRS(wkt)
			}
			continue
		}
		if skipRE.MatchString(line) {
			continue
		}
		// A field first: its name may be "Geometry" or "Feature Count".
		if m := fieldRE.FindStringSubmatch(line); m != nil {
			w, _ := strconv.Atoi(m[3])
			p, _ := strconv.Atoi(m[4])
			cur.Fields = append(cur.Fields, Field{Name: m[1], Type: m[2], Width: w, Precision: p,
				NotNull: strings.Contains(m[5], "NOT NULL")})
			continue
		}
		if m := geometryRE.FindStringSubmatch(line); m != nil {
			if cur.GeometryType == "" {
				cur.GeometryType = m[1]
			}
			continue
		}
		if m := countRE.FindStringSubmatch(line); m != nil {
			cur.FeatureCount, _ = strconv.ParseInt(m[1], 10, 64)
			continue
		}
		if m := extentRE.FindStringSubmatch(line); m != nil {
			if cur.extent == nil {
				cur.extent = make([]float64, 4)
				for i := range 4 {
					if cur.extent[i], err = strconv.ParseFloat(m[i+1], 64); err != nil {
						return "", nil, fmt.Errorf("layer %q: extent %q: %w", cur.Name, line, err)
					}
				}
			}
			continue
		}
	}
	if err := sc.Err(); err != nil {
		return "", nil, err
	}
	if cur == nil {
		return "", nil, fmt.Errorf("it has no vector layer")
	}
	return driver, layers, nil
}

// readWKT reads the WKT that follows "Layer SRS WKT:", to the bracket that
// closes it; "(unknown)" is no CRS.
func readWKT(sc *bufio.Scanner) (string, error) {
	var b strings.Builder
	depth, quoted, opened := 0, false, false
	for sc.Scan() {
		line := sc.Text()
		if !opened && strings.TrimSpace(line) == "(unknown)" {
			return "", nil
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
		for i := 0; i < len(line); i++ {
			switch c := line[i]; {
			case c == '"':
				quoted = !quoted
			case quoted:
			case c == '[':
				depth++
				opened = true
			case c == ']':
				depth--
			}
		}
		if opened && depth <= 0 {
			return b.String(), nil
		}
	}
	return "", fmt.Errorf("its CRS definition is cut short")
}

// toWGS84 returns the WGS84 bounding box of extent [xmin, ymin, xmax, ymax]
// in CRS wkt: its edges, each cut into extentEdgePoints, go through
// gdaltransform (longitude first), and points outside the CRS's domain are
// dropped. nil when no point could be brought.
func toWGS84(ctx context.Context, s *gdalcmd.Staged, wkt string, extent []float64) ([]float64, error) {
	x0, y0, x1, y1 := extent[0], extent[1], extent[2], extent[3]
	var in strings.Builder
	for i := 0; i <= extentEdgePoints; i++ {
		f := float64(i) / extentEdgePoints
		x, y := x0+(x1-x0)*f, y0+(y1-y0)*f
		fmt.Fprintf(&in, "%.17g %.17g\n%.17g %.17g\n%.17g %.17g\n%.17g %.17g\n", x, y0, x, y1, x0, y, x1, y)
	}
	out, err := gdalcmd.Output(ctx, s, strings.NewReader(in.String()), "gdaltransform",
		"-s_srs", wkt, "-t_srs", "EPSG:4326", "-output_xy")
	if err != nil {
		return nil, err
	}
	var b bounds
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		x, errx := strconv.ParseFloat(f[0], 64)
		y, erry := strconv.ParseFloat(f[1], 64)
		if errx == nil && erry == nil && x >= -180 && x <= 180 && y >= -90 && y <= 90 {
			b.add(x, y)
		}
	}
	return b.slice(), nil
}
