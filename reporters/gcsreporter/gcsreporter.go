// Package gcsreporter is the "gcs_detailed" reporter: it keeps every
// envelope of a task run and, when the run finishes, writes them as one
// newline-delimited JSON object (optionally gzipped) to
//
//	{bucket}/{prefix}/{schema_name}/{task_type}/{task_id}.ndjson[.gz]
//
// then adds the object's URL and record count to the task's outputs
// ({"report_url": "gs://…", "report_records": N}).
//
// Memory is bounded: envelopes are encoded as they arrive into a buffer of
// at most Config.MemoryLimit bytes, which spills to a temporary file when it
// is full. The destination is a Cloud Storage bucket (gs://) or a local
// folder (file://, the default when no bucket is configured, so the reporter
// works out of the box), both written through objio: an object appears only
// once complete.
//
// A Store opens the destination once and builds one Reporter per run; it
// implements reporters.Builder and io.Closer.
package gcsreporter

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/reporters"
)

// Defaults, filled in by Config.withDefaults.
const (
	// DefaultMemoryLimit is how many bytes of a report are kept in memory
	// before it spills to a temporary file.
	DefaultMemoryLimit = 8 << 20
	// DefaultLocalDirName is the folder, under the system's temporary
	// folder, that receives reports when neither BucketURL nor LocalDir is set.
	DefaultLocalDirName = "wf-reports"
)

// Content types of the written objects.
const (
	contentTypeNDJSON = "application/x-ndjson"
	contentTypeGzip   = "application/gzip"
)

// Config configures where detailed reports go. The zero value writes plain
// NDJSON under a local folder.
type Config struct {
	// BucketURL is the destination: gs://bucket/optional/prefix for Cloud
	// Storage, file:///absolute/dir for a local folder, or empty for LocalDir.
	BucketURL string
	// LocalDir is the folder used when BucketURL is empty (the engine sets
	// it under its data folder). Empty means {os.TempDir()}/wf-reports.
	LocalDir string
	// Gzip compresses the objects (and the spilled data) and names them .ndjson.gz.
	Gzip bool
	// MemoryLimit is how many bytes of one report stay in memory before it
	// spills to a temporary file. Zero means DefaultMemoryLimit.
	MemoryLimit int
	// TempDir is where spilled reports are kept until they are written.
	// Empty means os.TempDir().
	TempDir string
	// Endpoint is the Cloud Storage JSON API endpoint, for an emulator such
	// as fake-gcs-server (http://127.0.0.1:4443/storage/v1/): requests to it
	// carry no credentials. Empty means Google's endpoint with Application
	// Default Credentials (or STORAGE_EMULATOR_HOST, as objio.Config says).
	Endpoint string
}

// withDefaults returns cfg with every unset field given its default; it is
// the one place where the reporter's defaults live.
func (cfg Config) withDefaults() Config {
	cfg.LocalDir = cmp.Or(cfg.LocalDir, filepath.Join(os.TempDir(), DefaultLocalDirName))
	cfg.MemoryLimit = cmp.Or(cfg.MemoryLimit, DefaultMemoryLimit)
	cfg.TempDir = cmp.Or(cfg.TempDir, os.TempDir())
	return cfg
}

// destination is a parsed, defaulted BucketURL.
type destination struct {
	scheme string // "gs" or "file"
	bucket string // the bucket name (gs) or the absolute folder (file)
	prefix string // the key prefix inside the bucket, without slashes around it
}

// parse validates a defaulted configuration and returns its destination,
// reporting every problem at once.
func (cfg Config) parse() (destination, error) {
	var errs []error
	var d destination
	if cfg.MemoryLimit < 0 {
		errs = append(errs, fmt.Errorf("memory limit is %d, want more than zero", cfg.MemoryLimit))
	}
	raw := cfg.BucketURL
	if raw == "" {
		abs, err := filepath.Abs(cfg.LocalDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("local folder %q: %w", cfg.LocalDir, err))
		}
		d = destination{scheme: "file", bucket: abs}
	} else if u, err := url.Parse(raw); err != nil {
		errs = append(errs, fmt.Errorf("bucket URL %q: %w", raw, err))
	} else {
		switch u.Scheme {
		case "gs":
			if u.Host == "" {
				errs = append(errs, fmt.Errorf("bucket URL %q: the bucket name is missing, want gs://bucket/prefix", raw))
			}
			d = destination{scheme: "gs", bucket: u.Host, prefix: strings.Trim(u.Path, "/")}
		case "file":
			if u.Host != "" && u.Host != "localhost" {
				errs = append(errs, fmt.Errorf("bucket URL %q: want file:///absolute/folder", raw))
			}
			if !path.IsAbs(u.Path) {
				errs = append(errs, fmt.Errorf("bucket URL %q: the folder must be absolute, want file:///absolute/folder", raw))
			}
			d = destination{scheme: "file", bucket: filepath.FromSlash(path.Clean(u.Path))}
		default:
			errs = append(errs, fmt.Errorf("bucket URL %q: scheme %q is not supported, want gs:// or file://", raw, u.Scheme))
		}
		if u.RawQuery != "" {
			errs = append(errs, fmt.Errorf("bucket URL %q: query parameters are not supported", raw))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return d, fmt.Errorf("invalid detailed report configuration: %w", err)
	}
	return d, nil
}

// Store is an opened report destination, shared by every run's reporter.
// It is safe for concurrent use.
type Store struct {
	cfg     Config
	dest    destination
	objects *objio.Opener
}

// Open validates cfg and opens its destination: for gs:// it builds a Cloud
// Storage client (failing at once when no credentials can be found), for a
// local folder it creates the folder.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	dest, err := cfg.parse()
	if err != nil {
		return nil, err
	}
	oc := objio.Config{GCSEndpoint: cfg.Endpoint}
	if dest.scheme == "file" {
		// Reports are written through the report folder's root, as task
		// files are through files.local_roots: each in its tenant's folder
		// (the key starts with the schema name), none outside.
		oc.LocalRoots = []string{dest.bucket}
	}
	s := &Store{cfg: cfg, dest: dest, objects: objio.New(oc)}
	switch dest.scheme {
	case "gs":
		if err := s.objects.ConnectGCS(ctx); err != nil {
			return nil, fmt.Errorf("error opening bucket %s: %w", dest.bucket, err)
		}
	case "file":
		if err := os.MkdirAll(dest.bucket, 0o755); err != nil {
			return nil, fmt.Errorf("error opening report folder %s: %w", dest.bucket, err)
		}
	}
	return s, nil
}

// Close releases the destination. Reporters must be finished first. It
// holds no resource today (the Cloud Storage client needs no closing) and
// is kept so that a Store is an io.Closer.
func (s *Store) Close() error { return nil }

// Key returns the object key of task's report inside the bucket.
func (s *Store) Key(task reporters.TaskInfo) string {
	name := task.ID.String() + ".ndjson"
	if s.cfg.Gzip {
		name += ".gz"
	}
	return path.Join(s.dest.prefix, task.SchemaName, task.TaskType, name)
}

// URL returns the gs:// or file:// URL of the object with key.
func (s *Store) URL(key string) string {
	if s.dest.scheme == "gs" {
		return (&url.URL{Scheme: "gs", Host: s.dest.bucket, Path: "/" + key}).String()
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(s.dest.bucket, filepath.FromSlash(key)))}).String()
}

// NewReporter returns the reporter of one run of task; it implements
// reporters.Builder. The task's schema name and type become folders of the
// object key, so they must be plain names (no slash, not "." or "..").
func (s *Store) NewReporter(task reporters.TaskInfo) (reporters.Reporter, error) {
	var errs []error
	for what, v := range map[string]string{"schema name": task.SchemaName, "task type": task.TaskType} {
		if v == "" || v == "." || v == ".." || strings.ContainsAny(v, `/\`) {
			errs = append(errs, fmt.Errorf("%s %q cannot name a folder of the report", what, v))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("error creating the detailed report of task %s: %w", task.ID, err)
	}
	key := s.Key(task)
	return &Reporter{store: s, task: task, key: key, url: s.URL(key)}, nil
}

// Reporter keeps the envelopes of one task run and writes them at Finish.
// It is safe for concurrent use.
type Reporter struct {
	store *Store
	task  reporters.TaskInfo
	key   string
	url   string

	mu        sync.Mutex
	finishing bool
	records   int64
	buf       *spillBuffer // nil until the first record (or Finish)
	gz        *gzip.Writer // nil unless Config.Gzip
	sink      io.Writer    // gz or buf
	complete  bool         // the encoded stream is closed (gzip trailer written)
	err       error        // a sticky write error: the report is incomplete
	finishMu  sync.Mutex   // serialises Finish calls
	result    map[string]any
}

// start creates the buffer (and gzip stream) on first use. r.mu is held.
func (r *Reporter) start() {
	if r.buf != nil {
		return
	}
	r.buf = newSpillBuffer(r.store.cfg.MemoryLimit, r.store.cfg.TempDir)
	r.sink = r.buf
	if r.store.cfg.Gzip {
		r.gz = gzip.NewWriter(r.buf)
		r.sink = r.gz
	}
}

// Report encodes env as one line of the report. Encoding happens outside
// the lock; only the append is serialised.
func (r *Reporter) Report(_ context.Context, env reporters.Envelope) error {
	line, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("error encoding a record of task %s: %w", r.task.ID, err)
	}
	line = append(line, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finishing {
		return fmt.Errorf("error reporting a record of task %s: %w", r.task.ID, reporters.ErrFinished)
	}
	if r.err != nil {
		return r.err
	}
	r.start()
	if _, err := r.sink.Write(line); err != nil {
		r.err = fmt.Errorf("error keeping a record of task %s: %w", r.task.ID, err)
		return r.err
	}
	r.records++
	return nil
}

// Finish writes the report as one object and returns {"report_url": URL,
// "report_records": N}; a run with no record still gets an (empty) object.
// A cancelled ctx aborts the upload: no partial object is left. After a
// failure Finish may be called again to retry the upload (the records are
// kept until it succeeds); after a success it returns the same outputs.
func (r *Reporter) Finish(ctx context.Context) (map[string]any, error) {
	r.mu.Lock()
	r.finishing = true
	r.mu.Unlock()

	r.finishMu.Lock()
	defer r.finishMu.Unlock()
	if r.result != nil {
		return maps.Clone(r.result), nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("error writing report %s: %w", r.url, err)
	}
	// No Report runs from here on (finishing is set), so r's fields are ours.
	if r.err != nil {
		return nil, fmt.Errorf("error writing report %s: %w", r.url, r.err)
	}
	r.start()
	if !r.complete {
		if r.gz != nil {
			if err := r.gz.Close(); err != nil {
				return nil, fmt.Errorf("error writing report %s: %w", r.url, err)
			}
		}
		r.complete = true
	}
	if err := r.upload(ctx); err != nil {
		return nil, fmt.Errorf("error writing report %s: %w", r.url, err)
	}
	r.result = map[string]any{"report_url": r.url, "report_records": r.records}
	// The report is written; a temporary file that cannot be removed is no
	// reason to fail it (it was unlinked at creation where the system allows).
	_ = r.buf.Close()
	return maps.Clone(r.result), nil
}

// upload copies the encoded records into one new object. On any error, or
// when ctx ends first, the write is aborted, so the object is either
// complete or not there.
func (r *Reporter) upload(ctx context.Context) error {
	src, err := r.buf.Reader()
	if err != nil {
		return err
	}
	contentType := contentTypeNDJSON
	if r.gz != nil {
		contentType = contentTypeGzip
	}
	w, err := r.store.objects.Create(ctx, r.url, contentType)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, src); err != nil {
		w.Abort()
		return err
	}
	if err := ctx.Err(); err != nil {
		w.Abort()
		return err
	}
	return w.Close()
}
