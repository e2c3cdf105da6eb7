package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/require"
)

// envOf returns a LookupEnv reading m, so tests never touch the process
// environment and can run in parallel.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// writeFile writes content to wf.yaml in a new folder and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wf.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// loadErr loads and returns the error text with the file's folder removed.
func loadErr(t *testing.T, opts Options) string {
	t.Helper()
	if opts.LookupEnv == nil {
		opts.LookupEnv = envOf(nil)
	}
	_, err := Load(opts)
	require.Error(t, err)
	msg := err.Error()
	if opts.File != "" {
		msg = strings.ReplaceAll(msg, filepath.Dir(opts.File)+string(filepath.Separator), "")
	}
	return msg
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := Load(Options{WorkDir: dir, LookupEnv: envOf(nil)})
	require.NoError(t, err)
	require.Empty(t, c.File())

	require.Equal(t, "", c.DatabaseURL)
	require.Equal(t, "wf", c.Name)
	require.Equal(t, "127.0.0.1:8080", c.Listen)
	require.Equal(t, "./.wf", c.DataDir)
	require.Equal(t, []string{"specs"}, c.Specs)
	require.Equal(t, "info", c.LogLevel)
	require.Equal(t, "auto", c.LogFormat)
	require.Equal(t, 100, c.Slots)
	require.Equal(t, time.Second, c.PollInterval)
	require.Equal(t, 30*time.Second, c.HeartbeatInterval)
	require.Equal(t, 30*time.Second, c.JanitorInterval)
	require.Equal(t, time.Hour, c.MaintenanceInterval)
	require.Equal(t, 5*time.Minute, c.VisibilityTimeout)
	require.Equal(t, 20*time.Second, c.Grace)
	require.Equal(t, Channels{TaskQueued: "new_task_queued", TaskStatusChanged: "task_status_changed", Events: "wf_events"}, c.Channels)
	require.Equal(t, Retention{Completed: 720 * time.Hour, Failed: 720 * time.Hour, DeadLetter: 2160 * time.Hour, DeadLetterEvents: 720 * time.Hour, PartitionsAhead: 3}, c.Retention)
	require.Empty(t, c.Tokens)
	require.Equal(t, HTTP{MaxBodyBytes: 1 << 20, MaxJSONDepth: 64, ReadTimeout: 15 * time.Second, WriteTimeout: 60 * time.Second}, c.HTTP)
	require.False(t, c.Report.Gzip)

	abs, err := filepath.Abs(filepath.Join(".wf", "reports"))
	require.NoError(t, err)
	require.Equal(t, "file://"+filepath.ToSlash(abs), c.Report.BucketURL)
	abs, err = filepath.Abs(filepath.Join(".wf", "files"))
	require.NoError(t, err)
	require.Equal(t, []string{abs}, c.Files.LocalRoots)
	require.Equal(t, SourceDefault, c.Origin("slots").Kind)
	data, err := filepath.Abs(".wf")
	require.NoError(t, err)
	require.Equal(t, map[string]string{os.TempDir(): "tmp", data: "data", c.Report.BucketURL: "reports",
		c.Tiles.CacheURL: "tiles"}, c.ServerFolders(), "what API answers hide")

	// The defaults themselves are valid.
	require.NoError(t, Default().Validate())
}

func TestLoadDefaultFileInWorkDir(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "name: from-workdir\n")
	c, err := Load(Options{WorkDir: filepath.Dir(path), LookupEnv: envOf(nil)})
	require.NoError(t, err)
	require.Equal(t, "from-workdir", c.Name)
	require.Equal(t, path, c.File())
}

func TestLoadConfigFileFromEnv(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "name: from-env-file\n")
	c, err := Load(Options{LookupEnv: envOf(map[string]string{"WF_CONFIG": path})})
	require.NoError(t, err)
	require.Equal(t, "from-env-file", c.Name)

	// --config wins over WF_CONFIG.
	other := writeFile(t, "name: from-flag-file\n")
	c, err = Load(Options{File: other, LookupEnv: envOf(map[string]string{"WF_CONFIG": path})})
	require.NoError(t, err)
	require.Equal(t, "from-flag-file", c.Name)
}

func TestLoadMissingNamedFile(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	msg := loadErr(t, Options{File: missing})
	require.Equal(t, "nope.yaml: cannot read the configuration file named by --config: no such file or directory", msg)

	msg = loadErr(t, Options{LookupEnv: envOf(map[string]string{"WF_CONFIG": missing})})
	require.Contains(t, msg, "cannot read the configuration file named by environment variable WF_CONFIG")
}

func TestLoadPrecedence(t *testing.T) {
	t.Parallel()
	path := writeFile(t, `# a comment
name: file-name
listen: 0.0.0.0:9000
slots: 7
specs: [a, b]
retention:
  completed: 48h
  failed: 24h
log_level: warn
`)
	env := map[string]string{
		"WF_NAME":                "env-name",
		"WF_RETENTION_COMPLETED": "72h",
		"WF_SPECS":               "x, y,,z",
		"WF_LOG_LEVEL":           "error",
		"WF_SLOTS":               "", // empty: unset
	}
	flags := map[string]string{"name": "flag-name", "log_level": "debug"}
	c, err := Load(Options{File: path, LookupEnv: envOf(env), Flags: flags})
	require.NoError(t, err)

	require.Equal(t, "flag-name", c.Name)                    // flag > env > file
	require.Equal(t, "debug", c.LogLevel)                    // flag > env > file
	require.Equal(t, 72*time.Hour, c.Retention.Completed)    // env > file
	require.Equal(t, []string{"x", "y", "z"}, c.Specs)       // env > file
	require.Equal(t, 24*time.Hour, c.Retention.Failed)       // file > default
	require.Equal(t, "0.0.0.0:9000", c.Listen)               // file > default
	require.Equal(t, 7, c.Slots)                             // empty env is unset
	require.Equal(t, 2160*time.Hour, c.Retention.DeadLetter) // default

	require.Equal(t, "flag --name", c.Origin("name").String())
	require.Equal(t, "environment variable WF_RETENTION_COMPLETED", c.Origin("retention.completed").String())
	require.Equal(t, path+":8:11", c.Origin("retention.failed").String())
	require.Equal(t, path+":3:9", c.Origin("listen").String())
	require.Equal(t, "environment variable WF_SPECS", c.Origin("specs[1]").String())
}

func TestLoadNameAlias(t *testing.T) {
	t.Parallel()
	c, err := Load(Options{WorkDir: t.TempDir(), LookupEnv: envOf(map[string]string{"NAME": "seed-name"})})
	require.NoError(t, err)
	require.Equal(t, "seed-name", c.Name)
	require.Equal(t, "environment variable NAME", c.Origin("name").String())

	c, err = Load(Options{WorkDir: t.TempDir(), LookupEnv: envOf(map[string]string{"NAME": "seed-name", "WF_NAME": "wf-name"})})
	require.NoError(t, err)
	require.Equal(t, "wf-name", c.Name)
}

// everyEnv sets every leaf to a valid value that differs from its default.
var everyEnv = map[string]string{
	"WF_DATABASE_URL":                     "postgres://wf:pw@db.example:5432/wf",
	"WF_DATABASE_SESSION_URL":             "postgres://wf:pw@db-direct.example:5432/wf",
	"WF_DATABASE_READ_URL":                "postgres://wf:pw@db-replica.example:5432/wf",
	"WF_CATALOG_DATABASE_URL":             "postgres://wf:pw@db-catalog.example:5432/catalog",
	"WF_NAME":                             "svc",
	"WF_LISTEN":                           ":9090",
	"WF_DATA_DIR":                         "/var/lib/wf",
	"WF_SPECS":                            "a,b",
	"WF_LOG_LEVEL":                        "debug",
	"WF_LOG_FORMAT":                       "json",
	"WF_SLOTS":                            "5",
	"WF_POLL_INTERVAL":                    "2s",
	"WF_HEARTBEAT_INTERVAL":               "10s",
	"WF_JANITOR_INTERVAL":                 "1m",
	"WF_MAINTENANCE_INTERVAL":             "2h",
	"WF_VISIBILITY_TIMEOUT":               "10m",
	"WF_GRACE":                            "5s",
	"WF_CHANNELS_TASK_QUEUED":             "q1",
	"WF_CHANNELS_TASK_STATUS_CHANGED":     "q2",
	"WF_CHANNELS_EVENTS":                  "q3",
	"WF_RETENTION_COMPLETED":              "1h",
	"WF_RETENTION_FAILED":                 "2h",
	"WF_RETENTION_DEAD_LETTER":            "3h",
	"WF_RETENTION_DEAD_LETTER_EVENTS":     "4h",
	"WF_RETENTION_PARTITIONS_AHEAD":       "6",
	"WF_TOKENS":                           `[{"name":"ci","role":"client","catalogs":["c1"],"token":"0123456789abcdef"}]`,
	"WF_REPORT_BUCKET_URL":                "gs://bucket/prefix",
	"WF_REPORT_GZIP":                      "true",
	"WF_FILES_LOCAL_ROOTS":                "/srv/files,/mnt/shared",
	"WF_TILES_CACHE_URL":                  "gs://tiles/wf",
	"WF_TILES_CACHE_GRACE":                "45m",
	"WF_HTTP_MAX_BODY_BYTES":              "2048",
	"WF_HTTP_MAX_JSON_DEPTH":              "32",
	"WF_OUTBOUND_ALLOW":                   "10.0.0.0/8,127.0.0.1",
	"WF_HTTP_READ_TIMEOUT":                "1s",
	"WF_HTTP_WRITE_TIMEOUT":               "2s",
	"WF_GCP_PROJECT":                      "my-project",
	"WF_GCP_BUCKET_TEMPLATE":              "geo-{schema}",
	"WF_GCP_LOCATION":                     "europe-west1",
	"WF_GCP_LIFECYCLE_DELETE_AFTER_DAYS":  "365",
	"WF_GCP_LIFECYCLE_ARCHIVE_AFTER_DAYS": "90",
	"WF_GCP_TOPIC_TEMPLATE":               "t-{catalog}",
	"WF_GCP_SUBSCRIPTION_TEMPLATE":        "s-{catalog}",
	"WF_GCP_PUSH_ENDPOINT":                "https://wf.example.com/hooks/gcs",
	"WF_GCP_PUSH_AUDIENCE":                "wf-hooks",
	"WF_GCP_PUSH_SERVICE_ACCOUNT":         "push@my-project.iam.gserviceaccount.com",
	"WF_GCP_OBJECT_PATH":                  "{collection}/{file}",
	"WF_SECRETS_KEYS":                     "k2:MjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjI=,k1:MTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTE=",
	"WF_ELASTICSEARCH_ADDRESSES":          "https://es1:9200,https://es2:9200",
	"WF_ELASTICSEARCH_USERNAME":           "wf",
	"WF_ELASTICSEARCH_PASSWORD":           "es-secret",
	"WF_ELASTICSEARCH_API_KEY":            "a2V5",
	"WF_ELASTICSEARCH_INDEX_TEMPLATE":     "geo-{collection}-{schema}",
	"WF_ELASTICSEARCH_FLUSH_BYTES":        "1048576",
	"WF_ELASTICSEARCH_WORKERS":            "4",
	"WF_ELASTICSEARCH_MAX_RETRIES":        "2",
	"WF_FAIRNESS_ENABLED":                 "false",
	"WF_FAIRNESS_WEIGHTS":                 "acme=3,beta=0.5",
	"WF_EVENTS_CONSUME":                   "false",
	"WF_EVENTS_UNMATCHED_GRACE":           "20m",
	"WF_WAREHOUSE_CONNECTIONS":            `[{"name":"dwh","type":"postgres","url":"postgres://u:pw@dwh/db","catalogs":["c1"],"tables":["public.sales"]}]`,
}

func TestEnvVarNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{
		"WF_DATABASE_URL", "WF_DATABASE_SESSION_URL", "WF_DATABASE_READ_URL", "WF_CATALOG_DATABASE_URL", "WF_NAME", "WF_LISTEN", "WF_DATA_DIR", "WF_SPECS", "WF_LOG_LEVEL", "WF_LOG_FORMAT",
		"WF_SLOTS", "WF_FAIRNESS_ENABLED", "WF_FAIRNESS_WEIGHTS", "WF_EVENTS_CONSUME", "WF_EVENTS_UNMATCHED_GRACE", "WF_POLL_INTERVAL", "WF_HEARTBEAT_INTERVAL", "WF_JANITOR_INTERVAL", "WF_MAINTENANCE_INTERVAL",
		"WF_VISIBILITY_TIMEOUT", "WF_GRACE",
		"WF_CHANNELS_TASK_QUEUED", "WF_CHANNELS_TASK_STATUS_CHANGED", "WF_CHANNELS_EVENTS",
		"WF_RETENTION_COMPLETED", "WF_RETENTION_FAILED", "WF_RETENTION_DEAD_LETTER",
		"WF_RETENTION_DEAD_LETTER_EVENTS", "WF_RETENTION_PARTITIONS_AHEAD",
		"WF_TOKENS", "WF_REPORT_BUCKET_URL", "WF_REPORT_GZIP", "WF_FILES_LOCAL_ROOTS", "WF_TILES_CACHE_URL", "WF_TILES_CACHE_GRACE",
		"WF_HTTP_MAX_BODY_BYTES", "WF_HTTP_MAX_JSON_DEPTH", "WF_HTTP_READ_TIMEOUT", "WF_HTTP_WRITE_TIMEOUT", "WF_OUTBOUND_ALLOW",
		"WF_GCP_PROJECT", "WF_GCP_BUCKET_TEMPLATE", "WF_GCP_LOCATION", "WF_GCP_LIFECYCLE_DELETE_AFTER_DAYS",
		"WF_GCP_LIFECYCLE_ARCHIVE_AFTER_DAYS", "WF_GCP_TOPIC_TEMPLATE", "WF_GCP_SUBSCRIPTION_TEMPLATE",
		"WF_GCP_PUSH_ENDPOINT", "WF_GCP_PUSH_AUDIENCE", "WF_GCP_PUSH_SERVICE_ACCOUNT", "WF_GCP_OBJECT_PATH",
		"WF_ELASTICSEARCH_ADDRESSES", "WF_ELASTICSEARCH_USERNAME", "WF_ELASTICSEARCH_PASSWORD", "WF_ELASTICSEARCH_API_KEY",
		"WF_ELASTICSEARCH_INDEX_TEMPLATE", "WF_ELASTICSEARCH_FLUSH_BYTES", "WF_ELASTICSEARCH_WORKERS", "WF_ELASTICSEARCH_MAX_RETRIES",
		"WF_WAREHOUSE_CONNECTIONS", "WF_SECRETS_KEYS",
	}, EnvVars())
}

// TestEveryLeafHasAnEnvVar sets every variable and checks that each leaf of
// Config moved away from its default: no field lacks a variable.
func TestEveryLeafHasAnEnvVar(t *testing.T) {
	t.Parallel()
	vars := EnvVars()
	require.Len(t, everyEnv, len(vars))
	for _, name := range vars {
		require.Contains(t, everyEnv, name)
	}
	c, err := Load(Options{WorkDir: t.TempDir(), LookupEnv: envOf(everyEnv)})
	require.NoError(t, err)
	def := Default()
	for _, l := range leaves() {
		require.NotEqual(t, l.field(def).Interface(), l.field(c).Interface(), "leaf %s (%s) kept its default", l.key, l.env)
		require.Equal(t, "environment variable "+l.env, c.Origin(l.key).String())
	}
	require.Equal(t, []Token{{Name: "ci", Role: RoleClient, Catalogs: []string{"c1"}, TokenSHA256: HashToken("0123456789abcdef")}}, c.Tokens)
	require.True(t, c.Report.Gzip)
	require.Equal(t, []string{"/srv/files", "/mnt/shared"}, c.Files.LocalRoots)
	require.Equal(t, "gs://tiles/wf", c.Tiles.CacheURL)
	require.Equal(t, int64(2048), c.HTTP.MaxBodyBytes)
	require.Equal(t, "q3", c.Channels.Events)
	require.Equal(t, map[string]float64{"acme": 3, "beta": 0.5}, c.Fairness.TenantWeights())
}

func TestEveryLeafHasAFlag(t *testing.T) {
	t.Parallel()
	flags := map[string]string{}
	for _, l := range leaves() {
		flags[l.key] = everyEnv[l.env]
	}
	c, err := Load(Options{WorkDir: t.TempDir(), LookupEnv: envOf(nil), Flags: flags})
	require.NoError(t, err)
	require.Equal(t, 4*time.Hour, c.Retention.DeadLetterEvents)
	require.Equal(t, "flag --retention-dead-letter-events", c.Origin("retention.dead_letter_events").String())
	require.Equal(t, "--data-dir", FlagName("data_dir"))
	require.Contains(t, Keys(), "http.max_body_bytes")
}

func TestLoadEnvErrors(t *testing.T) {
	t.Parallel()
	msg := loadErr(t, Options{WorkDir: t.TempDir(), LookupEnv: envOf(map[string]string{
		"WF_SLOTS":         "many",
		"WF_POLL_INTERVAL": "5",
		"WF_REPORT_GZIP":   "maybe",
		"WF_TOKENS":        `[{"name":"x","rol":"client"}]`,
		"WF_DATABASE_URL":  "mysql://u:hunter2@h/db",
	})})
	require.Equal(t, strings.Join([]string{
		`environment variable WF_SLOTS: expected a whole number, got "many"`,
		`environment variable WF_POLL_INTERVAL: expected a duration such as 30s, 5m or 1h30m, got "5"`,
		`environment variable WF_TOKENS: expected a JSON array of tokens such as [{"name":"ci","role":"client","token":"…"}]: json: unknown field "rol"`,
		`environment variable WF_REPORT_GZIP: expected true or false, got "maybe"`,
	}, "\n"), msg)

	// Bounds are checked by Validate, which still names the variable; the
	// password is never echoed.
	msg = loadErr(t, Options{WorkDir: t.TempDir(), LookupEnv: envOf(map[string]string{
		"WF_DATABASE_URL": "mysql://u:hunter2@h/db",
		"WF_SLOTS":        "0",
		"WF_TOKENS":       `[{"name":"x","role":"root","token":"0123456789abcdef"}]`,
	})})
	require.NotContains(t, msg, "hunter2")
	require.Equal(t, strings.Join([]string{
		`environment variable WF_DATABASE_URL: expected postgres://user:password@host:port/database or key=value pairs, got a mysql:// URL`,
		`environment variable WF_SLOTS: must be at least 1, got 0`,
		`environment variable WF_TOKENS: tokens[0].role: expected one of client, worker, admin, got "root"`,
	}, "\n"), msg)
}

func TestLoadFlagErrors(t *testing.T) {
	t.Parallel()
	_, err := Load(Options{WorkDir: t.TempDir(), LookupEnv: envOf(nil), Flags: map[string]string{"log_level": "verbose"}})
	require.EqualError(t, err, `flag --log-level: expected one of debug, info, warn, error, got "verbose"`)
	var errs Errors
	require.ErrorAs(t, err, &errs)
	require.True(t, errs.OnlyFlags())

	_, err = Load(Options{WorkDir: t.TempDir(), LookupEnv: envOf(nil), Flags: map[string]string{"slots": "x", "nope": "1"}})
	require.EqualError(t, err, "flag --nope: sets no known configuration field \"nope\"\nflag --slots: expected a whole number, got \"x\"")

	// A problem from the environment is not a usage error.
	_, err = Load(Options{WorkDir: t.TempDir(), LookupEnv: envOf(map[string]string{"WF_SLOTS": "0"}), Flags: map[string]string{"log_level": "verbose"}})
	require.ErrorAs(t, err, &errs)
	require.False(t, errs.OnlyFlags())
}

func TestLoadFileErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		content string
		want    string
	}{
		{"syntax", "name: [\n", "wf.yaml:1: invalid YAML: did not find expected node content"},
		{"two documents", "name: a\n---\nname: b\n", "wf.yaml:2:1: expected one YAML document, found a second one"},
		{"not a mapping", "- a\n", "wf.yaml:1:1: expected a mapping, got a list"},
		{"duplicate", "name: a\nname: b\n", "wf.yaml:2:1: name: duplicate field"},
		{"unknown field", "nme: x\n", `wf.yaml:1:1: nme: unknown field; did you mean "name"?`},
		{"unknown nested field", "retention:\n  completd: 1h\n", `wf.yaml:2:3: retention.completd: unknown field; did you mean "completed"?`},
		{"unknown far field", "http:\n  zzzzzzzz: 1\n", `wf.yaml:2:3: http.zzzzzzzz: unknown field; expected one of max_body_bytes, max_json_depth, read_timeout, write_timeout`},
		{"section not a mapping", "retention: 5\n", `wf.yaml:1:12: retention: expected a mapping, got 5`},
		{"bad duration", "poll_interval: 5\n", "wf.yaml:1:16: poll_interval: expected a duration such as 30s, 5m or 1h30m, got 5"},
		{"bad duration text", "grace: soon\n", `wf.yaml:1:8: grace: expected a duration such as 30s, 5m or 1h30m, got "soon"`},
		{"bad integer", "slots: many\n", `wf.yaml:1:8: slots: expected a whole number, got "many"`},
		{"below minimum", "slots: 0\n", "wf.yaml:1:8: slots: must be at least 1, got 0"},
		{"bad enum", "log_level: verbose\n", `wf.yaml:1:12: log_level: expected one of debug, info, warn, error, got "verbose"`},
		{"bad list item", "specs: [a, 3]\n", "wf.yaml:1:12: specs[1]: expected a string, got 3"},
		{"empty list item", "specs: [a, '']\n", "wf.yaml:1:12: specs[1]: must not be empty"},
		{"bad channel", "channels: {events: bad-x}\n", `wf.yaml:1:20: channels.events: expected a PostgreSQL identifier (letters, digits and underscores, not starting with a digit, at most 63 characters), got "bad-x"`},
		{"empty local root", "files:\n  local_roots: [/srv/files, '']\n", "wf.yaml:2:29: files.local_roots[1]: must not be empty"},
		{"bad bool", "report:\n  gzip: sometimes\n", `wf.yaml:2:9: report.gzip: expected true or false, got "sometimes"`},
		{"secret not echoed", "database_url: 5\n", "wf.yaml:1:15: database_url: expected a string"},
		{"token required", "tokens:\n  - token: '0123456789abcdef'\n", strings.Join([]string{
			"wf.yaml:2:5: tokens[0].name: required field is missing",
			"wf.yaml:2:5: tokens[0].role: required field is missing",
		}, "\n")},
		{"token fields", "tokens:\n  - name: a\n    token: short\n    role: root\n    extra: 1\n", strings.Join([]string{
			"wf.yaml:3:12: tokens[0].token: must be at least 16 characters long",
			`wf.yaml:4:11: tokens[0].role: expected one of client, worker, admin, got "root"`,
			"wf.yaml:5:5: tokens[0].extra: unknown field; expected one of name, role, catalogs, task_types, token, token_sha256",
		}, "\n")},
		{"token hash", "tokens:\n  - {name: a, role: admin, token_sha256: abc}\n", "wf.yaml:2:42: tokens[0].token_sha256: expected 64 hexadecimal digits (the SHA-256 of the token)"},
		{"several errors in file order", "slots: 0\nnme: x\n", strings.Join([]string{
			"wf.yaml:1:8: slots: must be at least 1, got 0",
			`wf.yaml:2:1: nme: unknown field; did you mean "name"?`,
		}, "\n")},
		// Bounds the schema cannot express are found by Validate, still
		// placed in the file.
		{"validate heartbeat", "heartbeat_interval: 10m\n", "wf.yaml:1:21: heartbeat_interval: must be shorter than visibility_timeout (5m), or leases expire between heartbeats; got 10m"},
		{"validate zero interval", "janitor_interval: 0s\n", "wf.yaml:1:19: janitor_interval: must be a positive duration, got 0s"},
		{"validate listen", "listen: localhost\n", `wf.yaml:1:9: listen: expected host:port such as 127.0.0.1:8080 or :8080, got "localhost"`},
		{"validate token xor", "tokens:\n  - name: a\n    role: client\n", "wf.yaml:2:5: tokens[0]: set token or token_sha256"},
		{"validate duplicate channel", "channels:\n  events: new_task_queued\n", `wf.yaml:2:11: channels.events: must differ from channels.task_queued (both are "new_task_queued")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, loadErr(t, Options{File: writeFile(t, tc.content)}))
		})
	}
}

// TestLoadHostileFile checks that a small file cannot exhaust memory or the
// stack through aliases or nesting: each fails with an error, quickly.
func TestLoadHostileFile(t *testing.T) {
	t.Parallel()
	// A "billion laughs": ten levels of nine aliases, 9^10 values.
	var bomb strings.Builder
	bomb.WriteString("l0: &l0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&bomb, "l%d: &l%d [%s*l%d]\n", i, i, strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 8), i-1)
	}
	for _, tc := range []struct {
		name, content, want string
	}{
		{"alias bomb", bomb.String(), "wf.yaml:1:31: l5[0][2][0][5][4][7]: the file is too large: more than 100000 values once aliases are expanded"},
		{"alias in its anchor", "specs: &a [*a]\n", "wf.yaml:1:12: specs[0][0]: alias *a refers to a node that contains it"},
		{"alias in its mapping", "retention: &r {completed: *r}\n", "wf.yaml:1:27: retention.completed.completed: alias *r refers to a node that contains it"},
		{"deep nesting", "specs: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n",
			"wf.yaml:1:108: specs" + strings.Repeat("[0]", 100) + ": nested too deep: more than 100 levels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, loadErr(t, Options{File: writeFile(t, tc.content)}))
		})
	}
}

func TestLoadEmptyFile(t *testing.T) {
	t.Parallel()
	for _, content := range []string{"", "# only a comment\n", "~\n"} {
		c, err := Load(Options{File: writeFile(t, content), LookupEnv: envOf(nil)})
		require.NoError(t, err)
		require.Equal(t, "wf", c.Name)
	}
}

// fullFileTemplate is a wf.yaml that sets every key; %s is the admin
// token's SHA-256 (fullFile fills it in).
const fullFileTemplate = `# yaml-language-server: $schema=schemas/config.schema.json
database_url: postgres://wf:secret@db:5432/wf
name: billing
listen: ":8081"
data_dir: /var/lib/wf
specs: [specs, more-specs]
log_level: debug
log_format: json
slots: 12
poll_interval: 500ms
heartbeat_interval: 20s
janitor_interval: 1m
maintenance_interval: 30m
visibility_timeout: 1m30s
grace: 0s
channels: {task_queued: a, task_status_changed: b, events: c}
retention: {completed: 24h, failed: 48h, dead_letter: 96h, dead_letter_events: 12h, partitions_ahead: 2}
tokens:
  - name: ci
    role: client
    catalogs: [cat1, cat2]
    token: "0123456789abcdef0123"
  - name: ops
    role: admin
    token_sha256: %s
report: {bucket_url: "gs://reports/wf", gzip: true}
files: {local_roots: [/srv/wf/files, shared/]}
http: {max_body_bytes: 4096, read_timeout: 5s, write_timeout: 10s}
`

// fullFile is fullFileTemplate with the admin token hash sha (upper case,
// as a user may paste it).
func fullFile(sha string) string { return fmt.Sprintf(fullFileTemplate, strings.ToUpper(sha)) }

func TestLoadFullFile(t *testing.T) {
	t.Parallel()
	sha := HashToken("an-admin-token-of-some-length")
	path := writeFile(t, fullFile(sha))
	c, err := Load(Options{File: path, LookupEnv: envOf(nil)})
	require.NoError(t, err)
	require.Equal(t, "postgres://wf:secret@db:5432/wf", c.DatabaseURL)
	require.Equal(t, "billing", c.Name)
	require.Equal(t, 500*time.Millisecond, c.PollInterval)
	require.Equal(t, 90*time.Second, c.VisibilityTimeout)
	require.Zero(t, c.Grace)
	require.Equal(t, Channels{"a", "b", "c"}, c.Channels)
	require.Equal(t, 2, c.Retention.PartitionsAhead)
	require.Equal(t, []Token{
		{Name: "ci", Role: RoleClient, Catalogs: []string{"cat1", "cat2"}, TokenSHA256: HashToken("0123456789abcdef0123")},
		{Name: "ops", Role: RoleAdmin, TokenSHA256: sha},
	}, c.Tokens)
	require.Equal(t, Report{BucketURL: "gs://reports/wf", Gzip: true}, c.Report)
	shared, err := filepath.Abs("shared")
	require.NoError(t, err)
	require.Equal(t, []string{"/srv/wf/files", shared}, c.Files.LocalRoots, "a relative root resolves against the working folder")
	require.Equal(t, HTTP{MaxBodyBytes: 4096, MaxJSONDepth: 64, ReadTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second}, c.HTTP)
	require.Equal(t, path+":21:22", c.Origin("tokens[0].catalogs[1]").String())
	require.Equal(t, path+":22:12", c.Origin("tokens[0].token").String())
	require.Equal(t, path+":23:5", c.Origin("tokens[1]").String())
}

// TestSchemaMatchesConfig checks that the schema and the struct name the
// same fields, so neither can drift from the other.
func TestSchemaMatchesConfig(t *testing.T) {
	t.Parallel()
	s, err := compiledSchema()
	require.NoError(t, err)
	schemaKeys := schemaFieldPaths(t, s, "")
	var structKeys []string
	var collect func(prefix string, typ reflect.Type)
	collect = func(prefix string, typ reflect.Type) {
		for _, name := range fieldNames(typ) {
			f, _ := fieldByYAMLName(typ, name)
			path := prefix + name
			structKeys = append(structKeys, path)
			switch {
			case f.Type.Kind() == reflect.Struct:
				collect(path+".", f.Type)
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
				collect(path+"[].", f.Type.Elem())
			}
		}
	}
	collect("", reflect.TypeFor[Config]())
	require.ElementsMatch(t, structKeys, schemaKeys)
}

// schemaFieldPaths lists the field paths a schema declares, checking that
// every object refuses unknown fields.
func schemaFieldPaths(t *testing.T, s *jsonschema.Schema, prefix string) []string {
	t.Helper()
	deref := func(s *jsonschema.Schema) *jsonschema.Schema {
		for s.Ref != nil {
			s = s.Ref
		}
		return s
	}
	s = deref(s)
	require.Equal(t, false, s.AdditionalProperties, "%s allows unknown fields", prefix)
	var out []string
	for name, p := range s.Properties {
		p = deref(p)
		path := prefix + name
		out = append(out, path)
		if len(p.Properties) > 0 {
			out = append(out, schemaFieldPaths(t, p, path+".")...)
		}
		if p.Items2020 != nil {
			if it := deref(p.Items2020); len(it.Properties) > 0 {
				out = append(out, schemaFieldPaths(t, it, path+"[].")...)
			}
		}
	}
	return out
}

func fieldByYAMLName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
