// Package config is wf's one configuration: the Config struct, its defaults
// in one place (Default), and the loader that layers, in order, the defaults,
// the wf.yaml file (checked against schemas/config.schema.json), the WF_*
// environment variables and the command-line flags (Load), then validates the
// result once (Validate).
//
// Every error names where the bad value came from — file:line:col, the
// environment variable or the flag — and what was expected. Secrets (the
// database password, tokens) are masked by Masked and never echoed in errors;
// plain tokens are hashed at load and dropped.
package config

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// Config is the configuration of one wf service. Field names in wf.yaml are
// the yaml tags; the environment variable of a field is WF_ plus its yaml
// path in capitals joined by "_" (see EnvVars).
type Config struct {
	// DatabaseURL is the PostgreSQL connection string (URL or key=value
	// pairs). Empty means wf starts a local cluster of its own in
	// <DataDir>/pg. Secret: Masked hides its password.
	DatabaseURL string `yaml:"database_url"`
	// Database holds the connections wf opens beside DatabaseURL's pool.
	Database Database `yaml:"database"`
	// Catalog says where the catalog's data lives.
	Catalog Catalog `yaml:"catalog"`
	// Name is the service name (the seed's NAME): instances with one name
	// elect one leader.
	Name string `yaml:"name"`
	// Listen is the HTTP listen address, host:port.
	Listen string `yaml:"listen"`
	// DataDir holds the local PostgreSQL cluster and local reports.
	DataDir string `yaml:"data_dir"`
	// Specs are the spec files and folders to load.
	Specs []string `yaml:"specs"`
	// LogLevel is the lowest level logged: debug, info, warn or error.
	LogLevel string `yaml:"log_level"`
	// LogFormat is text, json or auto (text on a terminal, JSON otherwise).
	LogFormat string `yaml:"log_format"`
	// Slots is how many tasks one instance runs at once.
	Slots int `yaml:"slots"`
	// Fairness shares each claim batch among the tenants with due tasks.
	Fairness Fairness `yaml:"fairness"`
	// Events says whether this instance consumes the events outbox.
	Events Events `yaml:"events"`
	// PollInterval is how often followers poll and the leader sweeps.
	PollInterval time.Duration `yaml:"poll_interval"`
	// HeartbeatInterval is how often running tasks' leases are extended. It
	// must be shorter than VisibilityTimeout, or leases expire between beats.
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval"`
	// JanitorInterval is the least time between two janitor runs.
	JanitorInterval time.Duration `yaml:"janitor_interval"`
	// MaintenanceInterval is how often the leader creates partitions and
	// applies retention.
	MaintenanceInterval time.Duration `yaml:"maintenance_interval"`
	// VisibilityTimeout is the lease of a claimed task, for task types that
	// set none.
	VisibilityTimeout time.Duration `yaml:"visibility_timeout"`
	// Grace is how long running tasks may finish on shutdown before the rest
	// are handed back.
	Grace time.Duration `yaml:"grace"`
	// Channels are the PostgreSQL NOTIFY channel names.
	Channels Channels `yaml:"channels"`
	// Retention says how long finished rows are kept.
	Retention Retention `yaml:"retention"`
	// Tokens are the bearer tokens of the HTTP API. After Load they hold
	// only hashes.
	Tokens []Token `yaml:"tokens"`
	// Report says where detailed reports are written.
	Report Report `yaml:"report"`
	// Files says which local files tasks may read and write.
	Files Files `yaml:"files"`
	// Tiles says where vector tiles are cached.
	Tiles Tiles `yaml:"tiles"`
	// HTTP holds the HTTP server's limits.
	HTTP HTTP `yaml:"http"`
	// Outbound says where wf's outbound requests may go.
	Outbound Outbound `yaml:"outbound"`
	// GCP configures the catalogs' Google Cloud resources (gcp_provision,
	// gcp_catalog_cleanup) and the storage notifications pushed to
	// /hooks/gcs (gcs_storage_event).
	GCP GCP `yaml:"gcp"`
	// Elasticsearch is the cluster the elasticsearch task indexes into.
	Elasticsearch Elasticsearch `yaml:"elasticsearch"`
	// Warehouse declares the data warehouses dwh_join may read.
	Warehouse Warehouse `yaml:"warehouse"`
	// Secrets holds the keys that encrypt the secrets wf stores.
	Secrets Secrets `yaml:"secrets"`

	// origins records where each value set by Load came from (by field
	// path), so that Validate can point at it.
	origins map[string]Source
	// file is the configuration file Load read, if any.
	file string
}

// Secrets holds the keys that encrypt the secrets wf stores in the
// database (webhook signing secrets, see internal/secretbox).
type Secrets struct {
	// Keys are "<id>:<base64 of 32 bytes>" or "<id>:file:<path>" (the key
	// read from that file, so it need not be in wf.yaml), the current key
	// first, older ones after it for reading what they sealed. Empty:
	// secrets are stored clear. WF_SECRET_KEY (or WF_SECRETS_KEYS),
	// comma-separated, wins over the file. Secret: Masked hides inline keys.
	Keys []string `yaml:"keys"`
}

// Database holds the connections beside the pool on DatabaseURL.
type Database struct {
	// SessionURL is a connection string straight to PostgreSQL (or through
	// a session-mode pooler) for what needs one session for a long time:
	// the leader election's advisory lock and LISTEN, and the migrations'
	// lock. Set it when DatabaseURL goes through a transaction-mode pooler
	// such as PgBouncer; the pool then also stops using prepared statements
	// (see docs/operations.md, "Production"). Empty: the session connection
	// uses DatabaseURL. Secret: Masked hides its password.
	SessionURL string `yaml:"session_url"`
	// ReadURL is a connection string to a read replica (a streaming
	// standby of the database on DatabaseURL) for the HTTP API's reads that
	// may lag: lists, the overview, the dashboard's pages (see
	// docs/operations.md, "Production"). Empty: every read goes to
	// DatabaseURL. Secret: Masked hides its password.
	ReadURL string `yaml:"read_url"`
}

// Catalog holds where the catalog application keeps its data.
type Catalog struct {
	// DatabaseURL is a connection string to a database of the catalog's
	// own: the tenant registry (schema catalog) and the tenants' feature
	// tables live there, and the queue's database (DatabaseURL) holds the
	// tasks and events only. Empty: the catalog shares the queue's
	// database. Secret: Masked hides its password.
	DatabaseURL string `yaml:"database_url"`
}

// Channels are the NOTIFY channel names; the defaults are the seed's.
type Channels struct {
	// TaskQueued is notified when a task is created or requeued.
	TaskQueued string `yaml:"task_queued"`
	// TaskStatusChanged is notified when a task changes status.
	TaskStatusChanged string `yaml:"task_status_changed"`
	// Events is notified when an event is written to the outbox.
	Events string `yaml:"events"`
}

// Retention says how long finished rows are kept before their partition may
// be dropped, and how many monthly partitions are created ahead.
type Retention struct {
	// Completed is how long COMPLETED tasks are kept.
	Completed time.Duration `yaml:"completed"`
	// Failed is how long FAILED tasks are kept.
	Failed time.Duration `yaml:"failed"`
	// DeadLetter is how long DEAD_LETTER tasks are kept.
	DeadLetter time.Duration `yaml:"dead_letter"`
	// DeadLetterEvents is how long DEAD_LETTER events are kept.
	DeadLetterEvents time.Duration `yaml:"dead_letter_events"`
	// PartitionsAhead is how many monthly partitions the leader keeps
	// created ahead of now.
	PartitionsAhead int `yaml:"partitions_ahead"`
}

// Events says what an instance does with the tasks.events outbox.
type Events struct {
	// Consume runs the event consumer: matching subscriptions create their
	// tasks, and the events no subscription wants are deleted, so none
	// piles up PENDING. Turn it off only on an instance whose spec set is
	// not the fleet's: its consumer would delete events the other
	// instances' subscriptions want.
	Consume bool `yaml:"consume"`
	// UnmatchedGrace: an event none of this instance's subscriptions
	// matches is deleted only once it is this old; younger, it is handed
	// back until then, so that an instance deployed with a new
	// Subscription consumes it meanwhile. Longer than a rolling deploy.
	UnmatchedGrace time.Duration `yaml:"unmatched_grace"`
}

// Fairness says how a claim batch is shared among tenants (schema_name):
// weighted round-robin within the highest priority class that is due (see
// docs/claiming.md, "Fair claiming across tenants").
type Fairness struct {
	// Enabled turns fair claiming on; off, a claim takes the highest
	// priority, then oldest due tasks, whoever's they are.
	Enabled bool `yaml:"enabled"`
	// Weights are "tenant=weight" pairs (schema_name, a positive number);
	// a tenant not named weighs 1. Weight 2 gets twice the share of a batch
	// of weight 1 while both have due tasks.
	Weights []string `yaml:"weights"`
}

// TenantWeights returns Weights as a map; call it after Validate (a pair
// that does not parse is left out).
func (f Fairness) TenantWeights() map[string]float64 {
	out := make(map[string]float64, len(f.Weights))
	for _, w := range f.Weights {
		if name, weight, ok := parseWeight(w); ok {
			out[name] = weight
		}
	}
	return out
}

// Report says where the detailed reporter writes.
type Report struct {
	// BucketURL is gs://bucket/prefix or file:///folder. Load turns an
	// empty value into file://<absolute DataDir>/reports.
	BucketURL string `yaml:"bucket_url"`
	// Gzip compresses report objects.
	Gzip bool `yaml:"gzip"`
}

// Tiles says where the tile cache lives (tiles_preseed writes it, the
// tile endpoint reads and fills it).
type Tiles struct {
	// CacheURL is gs://bucket/prefix or file:///folder; each tenant's tiles
	// go under <CacheURL>/<schema_name>/. Load turns an empty value into
	// file://<absolute DataDir>/tiles.
	CacheURL string `yaml:"cache_url"`
	// CacheGrace is how long the leader keeps a superseded version's tiles
	// (or a deleted collection's) before it deletes them, every
	// maintenance_interval: readers of the old version finish first.
	CacheGrace time.Duration `yaml:"cache_grace"`
}

// Files says which local files the ingestion and export tasks may name.
type Files struct {
	// LocalRoots are the only folders whose files a task's local path or
	// file:// URL may name (a relative path resolves against the first), so
	// an API client cannot make wf read or write any other file of the host.
	// Load resolves relative roots against the working folder and turns an
	// empty list into [<absolute DataDir>/files].
	LocalRoots []string `yaml:"local_roots"`
}

// Outbound says where wf's outbound requests (http(s) ingestion sources,
// webhook deliveries) may connect. Loopback, private, link-local (cloud
// metadata), shared (CGNAT), multicast, unspecified and other
// special-purpose addresses are refused unless allow-listed here.
type Outbound struct {
	// Allow lists CIDR prefixes (or single addresses) that are reached even
	// though they are special-purpose, such as 10.0.0.0/8 for an internal
	// file server, or 127.0.0.0/8 in tests.
	Allow []string `yaml:"allow"`
}

// GCP configures the Google Cloud side of the catalog application: each
// catalog's bucket, the Pub/Sub topic its notifications go to and the push
// subscription that delivers them to wf. Names come from templates with the
// placeholders {catalog} (the catalog id), {schema} (its tenant schema) and
// {project}.
type GCP struct {
	// Project is the Google Cloud project that holds the buckets, topics
	// and subscriptions. Empty: the gcp task types fail, saying so.
	Project string `yaml:"project"`
	// BucketTemplate names a catalog's bucket; it must hold {catalog} or
	// {schema}, so that every catalog has its own.
	BucketTemplate string `yaml:"bucket_template"`
	// Location is where new buckets are created (a region, dual-region or
	// multi-region such as EU).
	Location string `yaml:"location"`
	// LifecycleDeleteAfterDays, when positive, adds a lifecycle rule that
	// deletes objects older than this many days.
	LifecycleDeleteAfterDays int `yaml:"lifecycle_delete_after_days"`
	// LifecycleArchiveAfterDays, when positive, adds a lifecycle rule that
	// moves objects older than this many days to the ARCHIVE storage class.
	LifecycleArchiveAfterDays int `yaml:"lifecycle_archive_after_days"`
	// TopicTemplate names a catalog's Pub/Sub topic.
	TopicTemplate string `yaml:"topic_template"`
	// SubscriptionTemplate names the push subscription on that topic.
	SubscriptionTemplate string `yaml:"subscription_template"`
	// PushEndpoint is the address Pub/Sub pushes to: wf's /hooks/gcs as the
	// internet reaches it (https://wf.example.com/hooks/gcs).
	PushEndpoint string `yaml:"push_endpoint"`
	// PushAudience is the audience of the push's OIDC token; empty means
	// PushEndpoint.
	PushAudience string `yaml:"push_audience"`
	// PushServiceAccount is the service account whose OIDC token Pub/Sub
	// attaches to each push; /hooks/gcs accepts only its tokens. Empty:
	// /hooks/gcs answers 404.
	PushServiceAccount string `yaml:"push_service_account"`
	// ObjectPath is the path convention of a bucket's objects, by which a
	// notification finds its asset: slash-separated segments, each a
	// literal or {catalog} (must equal the catalog's id), {collection} or
	// {file} (the rest of the name; last).
	ObjectPath string `yaml:"object_path"`
}

// HTTP holds the HTTP server's limits.
type HTTP struct {
	// MaxBodyBytes is the largest request body accepted.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxJSONDepth is the deepest nesting of arrays and objects a JSON body
	// may have; deeper bodies answer 400.
	MaxJSONDepth int `yaml:"max_json_depth"`
	// ReadTimeout bounds reading a whole request.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds writing a response.
	WriteTimeout time.Duration `yaml:"write_timeout"`
}

// Log levels and formats accepted by LogLevel and LogFormat.
const (
	LogLevelDebug = "debug"
	LogLevelInfo  = "info"
	LogLevelWarn  = "warn"
	LogLevelError = "error"

	LogFormatAuto = "auto"
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// Default returns the defaults of every field: the one place they live.
func Default() *Config {
	return &Config{
		Name:                "wf",
		Listen:              "127.0.0.1:8080",
		DataDir:             "./.wf",
		Specs:               []string{"specs"},
		LogLevel:            LogLevelInfo,
		LogFormat:           LogFormatAuto,
		Slots:               100,
		Fairness:            Fairness{Enabled: true},
		Events:              Events{Consume: true, UnmatchedGrace: 15 * time.Minute},
		PollInterval:        time.Second,
		HeartbeatInterval:   30 * time.Second,
		JanitorInterval:     30 * time.Second,
		MaintenanceInterval: time.Hour,
		VisibilityTimeout:   5 * time.Minute,
		Grace:               20 * time.Second,
		Channels: Channels{
			TaskQueued:        "new_task_queued",
			TaskStatusChanged: "task_status_changed",
			Events:            "wf_events",
		},
		Retention: Retention{
			Completed:        30 * 24 * time.Hour,
			Failed:           30 * 24 * time.Hour,
			DeadLetter:       90 * 24 * time.Hour,
			DeadLetterEvents: 30 * 24 * time.Hour,
			PartitionsAhead:  3,
		},
		Report: Report{},
		Tiles:  Tiles{CacheGrace: 15 * time.Minute},
		GCP: GCP{
			BucketTemplate:       "wf-{project}-{catalog}",
			Location:             "EU",
			TopicTemplate:        "wf-{catalog}-storage",
			SubscriptionTemplate: "wf-{catalog}-storage-push",
			ObjectPath:           "{catalog}/{collection}/{file}",
		},
		Elasticsearch: Elasticsearch{
			IndexTemplate: DefaultIndexTemplate,
			FlushBytes:    5 << 20,
			Workers:       2,
			MaxRetries:    5,
		},
		HTTP: HTTP{
			MaxBodyBytes: 1 << 20,
			MaxJSONDepth: 64,
			ReadTimeout:  15 * time.Second,
			WriteTimeout: 60 * time.Second,
		},
	}
}

// ServerFolders names the server's local folders besides the files roots
// that API answers must not show (see internal/redact.Folders): the data
// folder ("data"), a local report folder ("reports") and tile cache
// ("tiles"), and the system's temporary folder ("tmp"), which holds the
// scratch copies GDAL reads and the reports' spill files.
func (c *Config) ServerFolders() map[string]string {
	out := map[string]string{os.TempDir(): "tmp", c.Report.BucketURL: "reports", c.Tiles.CacheURL: "tiles"}
	if dir, err := filepath.Abs(c.DataDir); err == nil && c.DataDir != "" {
		out[dir] = "data"
	}
	return out
}

// File returns the configuration file Load read, or "" when there was none.
func (c *Config) File() string { return c.file }

// SlogLevel returns LogLevel as a log/slog level (info when unknown).
func (c *Config) SlogLevel() slog.Level {
	switch c.LogLevel {
	case LogLevelDebug:
		return slog.LevelDebug
	case LogLevelWarn:
		return slog.LevelWarn
	case LogLevelError:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// Origin returns where the value of a field came from, by field path (e.g.
// "retention.completed", "tokens[0].role"): a file position, an environment
// variable, a flag, or the default.
func (c *Config) Origin(path string) Source {
	for p := path; p != ""; p = parentPath(p) {
		if s, ok := c.origins[p]; ok {
			return s
		}
	}
	return Source{Kind: SourceDefault}
}

// clone returns a deep copy of c.
func (c *Config) clone() *Config {
	out := *c
	out.Specs = append([]string(nil), c.Specs...)
	out.Files.LocalRoots = append([]string(nil), c.Files.LocalRoots...)
	out.Outbound.Allow = append([]string(nil), c.Outbound.Allow...)
	out.Elasticsearch.Addresses = append([]string(nil), c.Elasticsearch.Addresses...)
	out.Secrets.Keys = append([]string(nil), c.Secrets.Keys...)
	if c.Warehouse.Connections != nil {
		out.Warehouse.Connections = make([]WarehouseConnection, len(c.Warehouse.Connections))
		for i, w := range c.Warehouse.Connections {
			w.Catalogs = append([]string(nil), w.Catalogs...)
			w.Tables = append([]string(nil), w.Tables...)
			out.Warehouse.Connections[i] = w
		}
	}
	out.Tokens = make([]Token, len(c.Tokens))
	for i, t := range c.Tokens {
		t.Catalogs = append([]string(nil), t.Catalogs...)
		t.TaskTypes = append([]string(nil), t.TaskTypes...)
		out.Tokens[i] = t
	}
	if c.Tokens == nil {
		out.Tokens = nil
	}
	out.origins = make(map[string]Source, len(c.origins))
	for k, v := range c.origins {
		out.origins[k] = v
	}
	return &out
}
