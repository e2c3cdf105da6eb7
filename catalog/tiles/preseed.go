package tiles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// HandlerName is the builtin handler name of the tiles_preseed task type.
const HandlerName = "tiles_preseed"

// MaxPreseedTiles bounds the tiles one task may cover, so a mistaken zoom
// range (z0–z22 of a continent) fails at once with a message rather than
// running for days.
const MaxPreseedTiles = 5_000_000

// Defaults of a pre-seeding run.
const (
	// DefaultWorkers is how many tiles are rendered at once.
	DefaultWorkers = 4
	// progressEvery is how many tiles pass between two progress writes.
	progressEvery = 200
)

// Handler is the tiles_preseed handler.
type Handler struct {
	svc *Service
	// Workers is how many tiles are rendered at once; 0 means DefaultWorkers.
	Workers int
}

// NewHandler returns the tiles_preseed handler on a service.
func NewHandler(svc *Service) *Handler { return &Handler{svc: svc} }

// PreseedInputs are a tiles_preseed task's inputs.
type PreseedInputs struct {
	CatalogID    string `json:"catalog_id"`
	CollectionID string `json:"collection_id"`
	// MinZoom and MaxZoom bound the zoom levels (default 0 and required).
	MinZoom *int `json:"min_zoom,omitempty"`
	MaxZoom *int `json:"max_zoom"`
	// BBox [west, south, east, north] in degrees limits the tiles; default
	// the extent of the collection's current features.
	BBox []float64 `json:"bbox,omitempty"`
}

// ParsePreseedInputs decodes and checks the inputs, strictly.
func ParsePreseedInputs(raw json.RawMessage) (PreseedInputs, error) {
	return builtin.ParseInputs(raw, "tiles_preseed", (*PreseedInputs).check)
}

// check gives in's unset fields their defaults and lists what is wrong with in.
func (in *PreseedInputs) check() (errs []error) {
	if in.CatalogID == "" || in.CollectionID == "" {
		errs = append(errs, errors.New(`"catalog_id" and "collection_id" are required`))
	}
	if in.MinZoom == nil {
		zero := 0
		in.MinZoom = &zero
	}
	switch {
	case in.MaxZoom == nil:
		errs = append(errs, fmt.Errorf(`"max_zoom" is required: the deepest zoom level to render, 0 to %d`, MaxZoom))
	case *in.MinZoom < 0 || *in.MaxZoom > MaxZoom || *in.MinZoom > *in.MaxZoom:
		errs = append(errs, fmt.Errorf(`"min_zoom" %d and "max_zoom" %d: want 0 ≤ min_zoom ≤ max_zoom ≤ %d`, *in.MinZoom, *in.MaxZoom, MaxZoom))
	}
	if in.BBox != nil {
		b := in.BBox
		if len(b) != 4 || b[0] < -180 || b[0] > 180 || b[2] < -180 || b[2] > 180 || b[1] < -90 || b[3] > 90 || b[1] > b[3] ||
			math.IsNaN(b[0]+b[1]+b[2]+b[3]) {
			errs = append(errs, fmt.Errorf(`"bbox" is %v: want [west, south, east, north] in degrees, south ≤ north (west > east crosses the antimeridian)`, b))
		}
	}
	return errs
}

// TileCounts are what a pre-seeding did with its tiles.
type TileCounts struct {
	// Total is every tile of the zoom range over the bbox; Done those
	// handled so far.
	Total int64 `json:"total"`
	Done  int64 `json:"done"`
	// Written were rendered and cached; Cached were in the cache already
	// for this version (a retry's, or the endpoint's); Empty meet no
	// feature and are not written.
	Written int64 `json:"written"`
	Cached  int64 `json:"cached"`
	Empty   int64 `json:"empty"`
}

// PreseedOutputs are a tiles_preseed task's outputs.
type PreseedOutputs struct {
	CatalogID    string `json:"catalog_id"`
	CollectionID string `json:"collection_id"`
	// Version is the collection's content version the tiles were made for.
	Version string    `json:"version"`
	MinZoom int       `json:"min_zoom"`
	MaxZoom int       `json:"max_zoom"`
	BBox    []float64 `json:"bbox"`
	// Cache is where the tiles are: Cache/{z}/{x}/{y}.mvt.
	Cache string     `json:"cache"`
	Tiles TileCounts `json:"tiles"`
}

// Handle implements the builtin handler signature: it renders and caches
// every non-empty tile of the zoom range over the bbox, skipping those
// cached already for the collection's current version, and writes
// {"tiles": {total, done, written, cached, empty}} into the task's
// progress as it goes.
func (h *Handler) Handle(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	in, err := ParsePreseedInputs(task.Inputs)
	if err != nil {
		return nil, wftype.Permanent(err)
	}
	st := h.svc.cfg.Store
	table, err := st.TaskFeatureTable(ctx, task.SchemaName, in.CatalogID, in.CollectionID, "pre-seeding the tiles of")
	if err != nil {
		return nil, err
	}
	col := Collection{CatalogID: in.CatalogID, Table: table}
	out := PreseedOutputs{CatalogID: in.CatalogID, CollectionID: in.CollectionID, MinZoom: *in.MinZoom, MaxZoom: *in.MaxZoom,
		BBox: in.BBox, Tiles: TileCounts{}}
	if out.Version, err = st.FeaturesVersion(ctx, table); err != nil {
		return nil, err
	}
	out.Cache = h.svc.cfg.CacheURL + "/" + table.Schema + "/" + in.CatalogID + "/" + table.Collection + "/" + out.Version
	if out.BBox == nil {
		if out.BBox, err = st.FeaturesExtent(ctx, table); err != nil {
			return nil, err
		}
	}
	if out.Version == "" || out.BBox == nil {
		// No features: no tile to make.
		return marshalOutputs(out)
	}
	ranges := Ranges(out.BBox, out.MinZoom, out.MaxZoom)
	for _, r := range ranges {
		out.Tiles.Total += r.Count()
	}
	if out.Tiles.Total > MaxPreseedTiles {
		return nil, wftype.Permanent(fmt.Errorf("error pre-seeding the tiles of %s/%s: zooms %d to %d over %v are %d tiles, more than %d: narrow the zoom range or the bbox",
			in.CatalogID, in.CollectionID, out.MinZoom, out.MaxZoom, out.BBox, out.Tiles.Total, MaxPreseedTiles))
	}
	if err := h.run(ctx, task, col, out.Version, ranges, &out.Tiles); err != nil {
		return nil, err
	}
	return marshalOutputs(out)
}

func marshalOutputs(out PreseedOutputs) (json.RawMessage, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("error encoding the tiles_preseed outputs: %w", err)
	}
	return b, nil
}

// run renders the tiles of ranges with Workers goroutines, counting into
// c and writing progress every progressEvery tiles and at the end.
func (h *Handler) run(ctx context.Context, task *wftype.Task, col Collection, version string, ranges []Range, c *TileCounts) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	coords := make(chan Coord)
	var mu sync.Mutex
	var wg sync.WaitGroup
	workers := h.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for coord := range coords {
				outcome, err := h.one(ctx, col, version, coord)
				if err != nil {
					cancel(err)
					continue
				}
				mu.Lock()
				c.Done++
				switch outcome {
				case outcomeWritten:
					c.Written++
				case outcomeCached:
					c.Cached++
				case outcomeEmpty:
					c.Empty++
				}
				snap, report := *c, c.Done%progressEvery == 0
				mu.Unlock()
				if report {
					h.progress(ctx, task, snap)
				}
			}
		}()
	}
feed:
	for _, r := range ranges {
		for x := r.X0; x <= r.X1; x++ {
			for y := r.Y0; y <= r.Y1; y++ {
				select {
				case coords <- Coord{Z: r.Z, X: x, Y: y}:
				case <-ctx.Done():
					break feed
				}
			}
		}
	}
	close(coords)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("error pre-seeding the tiles of %s/%s: %w", col.CatalogID, col.Table.Collection, err)
	}
	h.progress(ctx, task, *c)
	return nil
}

// Outcomes of one tile.
const (
	outcomeWritten = iota
	outcomeCached
	outcomeEmpty
)

// one handles tile c: cached already, or rendered, then written unless empty.
func (h *Handler) one(ctx context.Context, col Collection, version string, c Coord) (int, error) {
	ok, err := h.svc.exists(ctx, col, version, c)
	if err != nil {
		return 0, err
	}
	if ok {
		return outcomeCached, nil
	}
	tile, err := h.svc.cfg.Store.RenderTile(ctx, col.Table, col.Table.Collection, c.Z, c.X, c.Y)
	if err != nil {
		return 0, err
	}
	if len(tile) == 0 {
		return outcomeEmpty, nil
	}
	return outcomeWritten, h.svc.write(ctx, col, version, c, tile)
}

// progress writes the counts into the task's progress; a failed write is
// not the run's failure (the next one, or the outputs, will say).
func (h *Handler) progress(ctx context.Context, task *wftype.Task, c TileCounts) {
	b, err := json.Marshal(map[string]TileCounts{"tiles": c})
	if err == nil {
		_ = h.svc.cfg.Queue.SetProgress(ctx, task.ID, b)
	}
}
