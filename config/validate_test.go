package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(c *Config)
		want   string
	}{
		{"empty name", func(c *Config) { c.Name = " " }, "name: must not be empty"},
		{"listen without port", func(c *Config) { c.Listen = "localhost" }, `listen: expected host:port such as 127.0.0.1:8080 or :8080, got "localhost"`},
		{"listen bad port", func(c *Config) { c.Listen = "localhost:http" }, `listen: expected a port number from 0 to 65535, got "http"`},
		{"listen port too big", func(c *Config) { c.Listen = ":70000" }, `listen: expected a port number from 0 to 65535, got "70000"`},
		{"empty data dir", func(c *Config) { c.DataDir = "" }, "data_dir: must not be empty"},
		{"empty spec path", func(c *Config) { c.Specs = []string{"a", ""} }, "specs[1]: must not be empty"},
		{"log level", func(c *Config) { c.LogLevel = "trace" }, `log_level: expected one of debug, info, warn, error, got "trace"`},
		{"log format", func(c *Config) { c.LogFormat = "xml" }, `log_format: expected one of auto, text, json, got "xml"`},
		{"slots", func(c *Config) { c.Slots = 0 }, "slots: must be at least 1, got 0"},
		{"poll interval", func(c *Config) { c.PollInterval = 0 }, "poll_interval: must be a positive duration, got 0s"},
		{"negative retention", func(c *Config) { c.Retention.DeadLetter = -time.Hour }, "retention.dead_letter: must be a positive duration, got -1h"},
		{"negative grace", func(c *Config) { c.Grace = -time.Second }, "grace: must not be negative, got -1s"},
		{"heartbeat not below visibility", func(c *Config) { c.HeartbeatInterval = 5 * time.Minute },
			"heartbeat_interval: must be shorter than visibility_timeout (5m), or leases expire between heartbeats; got 5m"},
		{"channel name", func(c *Config) { c.Channels.Events = "1abc" },
			`channels.events: expected a PostgreSQL identifier (letters, digits and underscores, not starting with a digit, at most 63 characters), got "1abc"`},
		{"channel too long", func(c *Config) { c.Channels.TaskQueued = strings.Repeat("a", 64) }, "channels.task_queued: expected a PostgreSQL identifier"},
		{"duplicate channel", func(c *Config) { c.Channels.TaskStatusChanged = c.Channels.TaskQueued },
			`channels.task_status_changed: must differ from channels.task_queued (both are "new_task_queued")`},
		{"partitions ahead", func(c *Config) { c.Retention.PartitionsAhead = 0 }, "retention.partitions_ahead: must be at least 1, got 0"},
		{"max body", func(c *Config) { c.HTTP.MaxBodyBytes = 0 }, "http.max_body_bytes: must be at least 1, got 0"},
		{"write timeout", func(c *Config) { c.HTTP.WriteTimeout = 0 }, "http.write_timeout: must be a positive duration, got 0s"},
		{"bucket scheme", func(c *Config) { c.Report.BucketURL = "s3://b/p" }, `report.bucket_url: expected gs://bucket/prefix or file:///folder, got "s3://b/p"`},
		{"bucket without bucket", func(c *Config) { c.Report.BucketURL = "gs:///p" }, `report.bucket_url: expected gs://bucket/prefix or file:///folder: no bucket in "gs:///p"`},
		{"relative file bucket", func(c *Config) { c.Report.BucketURL = "file://reports" }, `report.bucket_url: expected gs://bucket/prefix or file:///folder (an absolute path after file://), got "file://reports"`},
		{"bucket template shared", func(c *Config) { c.GCP.BucketTemplate = "one-bucket" },
			`gcp.bucket_template: must hold {catalog} or {schema}, so that every catalog has its own; got "one-bucket"`},
		{"negative lifecycle", func(c *Config) { c.GCP.LifecycleDeleteAfterDays = -1 }, "gcp.lifecycle_delete_after_days: must be 0 (no rule) or more, got -1"},
		{"push endpoint", func(c *Config) { c.GCP.PushEndpoint = "wf.example.com/hooks/gcs" },
			`gcp.push_endpoint: expected an absolute https URL such as https://wf.example.com/hooks/gcs, got "wf.example.com/hooks/gcs"`},
		{"push account", func(c *Config) {
			c.GCP.PushServiceAccount, c.GCP.PushEndpoint = "push", "https://wf.example.com/hooks/gcs"
		}, `gcp.push_service_account: expected a service account's e-mail address, got "push"`},
		{"push without audience", func(c *Config) { c.GCP.PushServiceAccount = "push@p.iam.gserviceaccount.com" },
			"gcp.push_service_account: needs gcp.push_endpoint or gcp.push_audience"},
		{"object path", func(c *Config) { c.GCP.ObjectPath = "{catalog}/{file}" }, "gcp.object_path: expected slash-separated segments with {collection} and ending in {file}"},
		{"bad weight", func(c *Config) { c.Fairness.Weights = []string{"acme=2", "beta=0"} },
			`fairness.weights[1]: expected tenant=weight (a schema_name and a number above 0 and at most 1000, e.g. acme=2), got "beta=0"`},
		{"weight twice", func(c *Config) { c.Fairness.Weights = []string{"acme=2", "acme=3"} }, "fairness.weights[1]: tenant acme has a weight already"},
		{"empty local root", func(c *Config) { c.Files.LocalRoots = []string{"/srv/files", " "} }, "files.local_roots[1]: must not be empty"},
		{"relative local root", func(c *Config) { c.Files.LocalRoots = []string{"files"} },
			`files.local_roots[0]: expected an absolute folder (Load resolves relative ones against the working folder), got "files"`},
		{"database scheme", func(c *Config) { c.DatabaseURL = "mysql://u:pw@h/db" }, "database_url: expected postgres://user:password@host:port/database or key=value pairs, got a mysql:// URL"},
		{"database not a URL", func(c *Config) { c.DatabaseURL = "postgres://u:pw@h:port/db" }, "database_url: is not a valid URL; expected postgres://user:password@host:port/database or key=value pairs"},
		{"session URL without database URL", func(c *Config) { c.Database.SessionURL = "postgres://u:pw@h/db" }, "database.session_url: needs database_url: without it wf uses a local PostgreSQL of its own, with no pooler in front"},
		{"session URL scheme", func(c *Config) {
			c.DatabaseURL = "postgres://u:pw@pooler/db"
			c.Database.SessionURL = "mysql://u:pw@h/db"
		}, "database.session_url: expected postgres://user:password@host:port/database or key=value pairs, got a mysql:// URL"},
		{"database gibberish", func(c *Config) { c.DatabaseURL = "just-a-host" }, "database_url: expected postgres://user:password@host:port/database or key=value pairs"},
		{"index template without schema", func(c *Config) { c.Elasticsearch.IndexTemplate = "geo-{collection}" },
			`elasticsearch.index_template: must contain {schema} and {collection}, so that every tenant and collection has an index of its own; got "geo-{collection}"`},
		{"index template upper case", func(c *Config) { c.Elasticsearch.IndexTemplate = "Geo-{schema}-{collection}" },
			"elasticsearch.index_template: must be lower-case letters, digits"},
		{"elasticsearch address", func(c *Config) { c.Elasticsearch.Addresses = []string{"es:9200"} },
			`elasticsearch.addresses[0]: expected an http(s) URL such as https://es.internal:9200, got "es:9200"`},
		{"elasticsearch workers", func(c *Config) { c.Elasticsearch.Workers = 0 }, "elasticsearch.workers: must be from 1 to 64, got 0"},
		{"warehouse type", func(c *Config) {
			c.Warehouse.Connections = []WarehouseConnection{{Name: "w", Type: "mysql", Catalogs: []string{"*"}, Tables: []string{"a.b"}}}
		}, `warehouse.connections[0].type: expected one of postgres, bigquery, got "mysql"`},
		{"warehouse postgres without url", func(c *Config) {
			c.Warehouse.Connections = []WarehouseConnection{{Name: "w", Type: "postgres", Catalogs: []string{"*"}, Tables: []string{"a.b"}}}
		}, "warehouse.connections[0].url: required for a postgres connection"},
		{"warehouse bigquery without project", func(c *Config) {
			c.Warehouse.Connections = []WarehouseConnection{{Name: "w", Type: "bigquery", Catalogs: []string{"*"}, Tables: []string{"a.b"}}}
		}, "warehouse.connections[0].project: required for a bigquery connection"},
		{"warehouse without catalogs", func(c *Config) {
			c.Warehouse.Connections = []WarehouseConnection{{Name: "w", Type: "bigquery", Project: "p", Tables: []string{"a.b"}}}
		}, `warehouse.connections[0].catalogs: must name the catalogs that may use the connection (or "*" for all)`},
		{"warehouse table", func(c *Config) {
			c.Warehouse.Connections = []WarehouseConnection{{Name: "w", Type: "bigquery", Project: "p", Catalogs: []string{"*"}, Tables: []string{"sales"}}}
		}, `warehouse.connections[0].tables[0]: expected schema.table, dataset.table or schema.*, got "sales"`},
		{"warehouse dataset too long", func(c *Config) {
			c.Warehouse.Connections = []WarehouseConnection{{Name: "w", Type: "bigquery", Project: "p", Catalogs: []string{"*"},
				Tables: []string{strings.Repeat("d", 128) + ".t", strings.Repeat("d", 129) + ".t"}}}
		}, `warehouse.connections[0].tables[1]: expected schema.table, dataset.table or schema.*, got "` + strings.Repeat("d", 129) + `.t"`},
		{"warehouse table too long", func(c *Config) {
			c.Warehouse.Connections = []WarehouseConnection{{Name: "w", Type: "bigquery", Project: "p", Catalogs: []string{"*"},
				Tables: []string{"d." + strings.Repeat("t", 1001), "d." + strings.Repeat("t", 1002), "d.*"}}}
		}, `warehouse.connections[0].tables[1]: expected schema.table, dataset.table or schema.*, got "d.` + strings.Repeat("t", 1002) + `"`},
		{"weight tenant too long", func(c *Config) {
			c.Fairness.Weights = []string{strings.Repeat("a", 63) + "=2", strings.Repeat("a", 64) + "=2"}
		},
			"fairness.weights[1]: expected tenant=weight"},
		{"warehouse duplicate", func(c *Config) {
			w := WarehouseConnection{Name: "w", Type: "bigquery", Project: "p", Catalogs: []string{"*"}, Tables: []string{"a.b"}}
			c.Warehouse.Connections = []WarehouseConnection{w, w}
		}, `warehouse.connections[1].name: duplicate name "w" (also warehouse.connections[0])`},
		{"token without name", func(c *Config) { c.Tokens = []Token{{Role: RoleClient, Token: "0123456789abcdef"}} }, "tokens[0].name: required field is missing"},
		{"token role", func(c *Config) { c.Tokens = []Token{{Name: "a", Role: "root", Token: "0123456789abcdef"}} }, `tokens[0].role: expected one of client, worker, admin, got "root"`},
		{"token neither", func(c *Config) { c.Tokens = []Token{{Name: "a", Role: RoleClient}} }, "tokens[0]: set token or token_sha256"},
		{"token both", func(c *Config) {
			c.Tokens = []Token{{Name: "a", Role: RoleClient, Token: "0123456789abcdef", TokenSHA256: HashToken("x")}}
		}, "tokens[0]: set token or token_sha256, not both"},
		{"token short", func(c *Config) { c.Tokens = []Token{{Name: "a", Role: RoleClient, Token: "short"}} }, "tokens[0].token: must be at least 16 characters long"},
		{"token hash", func(c *Config) { c.Tokens = []Token{{Name: "a", Role: RoleClient, TokenSHA256: "zz"}} },
			"tokens[0].token_sha256: expected 64 hexadecimal digits (the SHA-256 of the token)"},
		{"admin with catalogs", func(c *Config) {
			c.Tokens = []Token{{Name: "a", Role: RoleAdmin, Catalogs: []string{"c"}, Token: "0123456789abcdef"}}
		}, "tokens[0].catalogs: an admin token sees every catalog; remove catalogs or use role client"},
		{"empty catalog", func(c *Config) {
			c.Tokens = []Token{{Name: "a", Role: RoleClient, Catalogs: []string{""}, Token: "0123456789abcdef"}}
		}, "tokens[0].catalogs[0]: must not be empty"},
		{"duplicate token name", func(c *Config) {
			c.Tokens = []Token{{Name: "a", Role: RoleClient, Token: "0123456789abcdef"}, {Name: "a", Role: RoleWorker, Token: "fedcba9876543210"}}
		}, `tokens[1].name: duplicate token name "a" (also tokens[0])`},
		{"same token twice", func(c *Config) {
			c.Tokens = []Token{
				{Name: "a", Role: RoleClient, Token: "0123456789abcdef"},
				{Name: "b", Role: RoleAdmin, TokenSHA256: strings.ToUpper(HashToken("0123456789abcdef"))},
			}
		}, "tokens[1]: same token as tokens[0]; every token must be different"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			tc.mutate(c)
			err := c.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			var errs Errors
			require.ErrorAs(t, err, &errs)
			require.Len(t, errs, 1, err.Error())
		})
	}
}

func TestValidateCollectsEveryError(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Slots = 0
	c.LogLevel = "loud"
	c.Listen = "nowhere"
	err := c.Validate()
	require.EqualError(t, err, strings.Join([]string{
		`listen: expected host:port such as 127.0.0.1:8080 or :8080, got "nowhere"`,
		`log_level: expected one of debug, info, warn, error, got "loud"`,
		`slots: must be at least 1, got 0`,
	}, "\n"))
}

func TestValidateAcceptsLoadedConfig(t *testing.T) {
	t.Parallel()
	c, err := Load(Options{WorkDir: t.TempDir(), LookupEnv: envOf(map[string]string{
		"WF_TOKENS": `[{"name":"a","role":"client","token":"0123456789abcdef"}]`,
	})})
	require.NoError(t, err)
	// Once hashed, tokens still validate.
	require.NoError(t, c.Validate())
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0:                             "0s",
		time.Second:                   "1s",
		500 * time.Millisecond:        "500ms",
		720 * time.Hour:               "720h",
		90 * time.Minute:              "1h30m",
		time.Hour + time.Second:       "1h0m1s",
		5 * time.Minute:               "5m",
		5*time.Minute + 3*time.Second: "5m3s",
		-time.Hour:                    "-1h",
	} {
		require.Equal(t, want, FormatDuration(d))
	}
}
