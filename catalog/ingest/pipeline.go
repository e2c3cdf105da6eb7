package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
)

// The pipeline of one ingestion, stages joined by bounded channels:
//
//	read ──chunks──▶ process (one worker per CPU) ──in order──▶ batch ──▶ check ──▶ merge ──▶ report
//
// One goroutine reads records from the source in chunks; workers check
// and measure the records of a chunk (parsing, validation, WKB, hashes,
// stats: the bulk of wf's own CPU time per record); this goroutine takes
// the chunks back in source order, gives each accepted record its geoid
// (so geoids follow the source order, as UUIDv7s do) and cuts batches; one
// goroutine has PostGIS check a batch's geometries on a connection of its
// own while the batch before is merged; one merges each batch on the
// load's connection while the next is cut and checked,
// and another builds and reports the envelopes of a merged batch while the
// next one merges. At most four batches and a few chunks are held at
// once, so memory does not grow with the source; the first error cancels
// every stage. Every batch is merged in the load's one transaction, which
// the caller commits or rolls back.

// chunkSize is how many records a processing worker takes at once.
const chunkSize = 128

// errSource marks a source that broke off (malformed or unreadable).
var errSource = errors.New("the source cannot be read further")

// chunk is a run of consecutive records and, once done is closed, their
// items. The last chunk of a source says why reading stopped: eof, or err.
type chunk struct {
	recs  []*record
	items []item
	done  chan struct{}
	eof   bool
	err   error
}

// batch is a run of items merged in one transaction.
type batch struct {
	items    []*item // in their chunks' slices: not copied
	versions []store.FeatureVersion
	index    []int // versions[k] belongs to items[index[k]]
	ids      map[string]bool
	bytes    int
	// checked is PostGIS's verdict on each version's geometry.
	checked []string
}

// merged is a batch with the outcomes of its versions.
type merged struct {
	b        *batch
	outcomes []store.MergeOutcome
}

// stage sends fn of each value of in to out, in a goroutine of its own,
// until fn's first error: then it cancels the run (the other stages stop)
// and drains in (what the stage before already sent). It closes out when in
// is closed, and then sends the error (nil: none) on the channel it
// returns.
func stage[I, O any](in <-chan I, out chan<- O, cancel context.CancelFunc, fn func(I) (O, error)) <-chan error {
	done := make(chan error, 1)
	go func() {
		var err error
		for v := range in {
			if err != nil {
				continue // drain what the stage before already sent
			}
			var o O
			if o, err = fn(v); err != nil {
				cancel() // stop the other stages
				continue
			}
			out <- o
		}
		close(out)
		done <- err
	}()
	return done
}

// run reads, checks, writes and reports every record (see the pipeline
// above). It returns the counts of what was reported.
func (h *Handler) run(ctx context.Context, load *store.FeatureLoad, rr recordReader, p *processor, rep reporters.Reporter, sum *summarizer) (Counts, error) {
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: no stage outlives the run
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	ordered := h.process(ctx, &wg, rr, p)

	// Unbuffered: one batch is cut, one checked, one merged and one
	// reported at a time.
	batches := make(chan *batch)
	checked := make(chan *batch)
	reports := make(chan merged)
	// PostGIS checks the geometries of the next batch on a connection of
	// its own while the load's connection writes this one: the check is
	// most of a merge's server time, and it needs no lock.
	checkDone := stage(batches, checked, cancel, func(b *batch) (*batch, error) {
		var err error
		b.checked, err = h.cfg.Store.CheckGeometries(ctx, b.versions)
		return b, err
	})
	mergeDone := stage(checked, reports, cancel, func(b *batch) (merged, error) {
		if len(b.versions) == 0 {
			return merged{b, nil}, nil
		}
		outcomes, _, err := load.Merge(ctx, b.versions, b.checked)
		return merged{b, outcomes}, err
	})
	type result struct {
		counts Counts
		err    error
	}
	reportDone := make(chan result, 1)
	go func() {
		var c Counts
		var err error
		for m := range reports {
			if err == nil {
				if err = h.report(ctx, m, rep, &c, sum); err != nil {
					cancel()
				}
			}
		}
		reportDone <- result{c, err}
	}()

	readErr := h.cut(ctx, ordered, batches)
	close(batches)
	checkErr := <-checkDone
	mergeErr := <-mergeDone
	res := <-reportDone
	if checkErr != nil {
		return res.counts, checkErr
	}
	if mergeErr != nil {
		return res.counts, mergeErr
	}
	if res.err != nil {
		return res.counts, res.err
	}
	return res.counts, readErr
}

// process starts the reader and the processing workers; the chunks come
// out of the returned channel in source order, to be waited for (done).
func (h *Handler) process(ctx context.Context, wg *sync.WaitGroup, rr recordReader, p *processor) <-chan *chunk {
	workers := runtime.GOMAXPROCS(0)
	// At most workers chunks wait in order, and one more is read.
	toWork := make(chan *chunk)
	ordered := make(chan *chunk, workers)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ordered)
		defer close(toWork)
		for {
			c := readChunk(ctx, rr)
			select {
			case ordered <- c:
			case <-ctx.Done():
				return
			}
			select {
			case toWork <- c:
			case <-ctx.Done():
				return
			}
			if c.eof || c.err != nil {
				return
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range toWork {
				c.items = make([]item, len(c.recs))
				for i, rec := range c.recs {
					c.items[i] = p.process(rec)
				}
				close(c.done)
			}
		}()
	}
	return ordered
}

// readChunk reads up to chunkSize records; a chunk shorter than that ends
// the source (eof) or says why it could not be read further (err).
func readChunk(ctx context.Context, rr recordReader) *chunk {
	c := &chunk{recs: make([]*record, 0, chunkSize), done: make(chan struct{})}
	for len(c.recs) < chunkSize {
		if ctx.Err() != nil {
			c.err = ctx.Err()
			return c
		}
		rec, err := rr.next()
		if errors.Is(err, io.EOF) {
			c.eof = true
			return c
		}
		if err != nil {
			if ctx.Err() != nil {
				// Cancelled or timed out while reading: not the source's fault.
				c.err = fmt.Errorf("error reading the source: %w", context.Cause(ctx))
			} else {
				c.err = fmt.Errorf("%w: %w", errSource, err)
			}
			return c
		}
		c.recs = append(c.recs, rec)
	}
	return c
}

// cut takes the processed chunks in source order and cuts them into
// batches, sent to batches; it returns why reading stopped early, if it
// did. The records read before a source broke off are still sent.
func (h *Handler) cut(ctx context.Context, ordered <-chan *chunk, batches chan<- *batch) error {
	newBatch := func() *batch {
		n := h.cfg.BatchSize
		return &batch{items: make([]*item, 0, n), versions: make([]store.FeatureVersion, 0, n), index: make([]int, 0, n),
			ids: make(map[string]bool, n)}
	}
	cur := newBatch()
	var readErr error
read:
	for {
		var c *chunk
		select {
		case c = <-ordered:
		case <-ctx.Done():
		}
		if c == nil {
			readErr = ctx.Err()
			break
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			readErr = ctx.Err()
			break read
		}
		for i := range c.items {
			it := &c.items[i]
			if it.rejected == nil {
				id, _, err := store.NewID()
				if err != nil {
					readErr = err
					break read
				}
				it.version.GeoID = id
				ext := it.version.ExternalID
				// One batch holds one version per external id: a repeated id
				// starts a new batch, so it merges against the first.
				if cur.ids[ext] {
					batches <- cur
					cur = newBatch()
				}
				cur.ids[ext] = true
				cur.versions = append(cur.versions, it.version)
				cur.index = append(cur.index, len(cur.items))
				cur.bytes += len(it.geometry) + len(it.version.WKB) + len(it.version.Properties)
			}
			cur.items = append(cur.items, it)
			if len(cur.versions) >= h.cfg.BatchSize || len(cur.items) >= 4*h.cfg.BatchSize || cur.bytes >= h.cfg.BatchBytes {
				batches <- cur
				cur = newBatch()
			}
		}
		if c.err != nil {
			readErr = c.err
			break
		}
		if c.eof {
			break
		}
	}
	if len(cur.items) > 0 && (readErr == nil || errors.Is(readErr, errSource)) {
		batches <- cur
	}
	return readErr
}

// report reports the items of a merged batch in source order and adds the
// stored ones to the summary.
func (h *Handler) report(ctx context.Context, m merged, rep reporters.Reporter, c *Counts, sum *summarizer) error {
	b := m.b
	byItem := make(map[int]store.MergeOutcome, len(m.outcomes))
	for k, o := range m.outcomes {
		byItem[b.index[k]] = o
	}
	for i := range b.items {
		it := b.items[i]
		c.Read++
		var env reporters.Envelope
		if it.rejected != nil {
			env = *it.rejected
			c.Rejected++
		} else {
			o := byItem[i]
			env = it.envelope(o)
			switch o.Action {
			case store.MergeCreated:
				c.Created++
			case store.MergeVersioned:
				c.Versioned++
			case store.MergeUnchanged:
				c.Unchanged++
			default:
				c.Rejected++
			}
			switch o.Action {
			case store.MergeCreated, store.MergeVersioned, store.MergeUnchanged:
				sum.add(it.props, it.stats.BBox)
			}
		}
		if err := rep.Report(ctx, env); err != nil {
			return fmt.Errorf("error reporting record %d: %w", c.Read, err)
		}
	}
	return nil
}
