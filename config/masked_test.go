package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestMaskDatabaseURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                "",
		"postgres://wf:s3cret@db:5432/wf": "postgres://wf:***@db:5432/wf",
		"postgres://wf@db/wf":             "postgres://wf@db/wf",
		"postgres://db/wf?user=wf&password=s3cret":  "postgres://db/wf?password=***&user=wf",
		"host=db user=wf password=s3cret dbname=wf": "host=db user=wf password=*** dbname=wf",
		"host=db password='s3 cret' dbname=wf":      "host=db password=*** dbname=wf",
		"postgres://wf:s3cret@db:port/wf":           "***",
	} {
		require.Equal(t, want, MaskDatabaseURL(in), in)
	}
}

func TestMasked(t *testing.T) {
	t.Parallel()
	c, err := Load(Options{WorkDir: t.TempDir(), LookupEnv: envOf(map[string]string{
		"WF_DATABASE_URL":           "postgres://wf:s3cret@db:5432/wf",
		"WF_DATABASE_SESSION_URL":   "postgres://wf:s3cret@db-direct:5432/wf",
		"WF_TOKENS":                 `[{"name":"ci","role":"client","catalogs":["c1"],"token":"0123456789abcdef"}]`,
		"WF_ELASTICSEARCH_PASSWORD": "es-s3cret",
		"WF_ELASTICSEARCH_API_KEY":  "key-s3cret",
		"WF_WAREHOUSE_CONNECTIONS":  `[{"name":"dwh","type":"postgres","url":"postgres://u:s3cret@dwh/db","catalogs":["*"],"tables":["public.*"]}]`,
	})})
	require.NoError(t, err)
	m := c.Masked()
	require.Equal(t, "postgres://wf:***@db:5432/wf", m.DatabaseURL)
	require.Equal(t, "postgres://wf:***@db-direct:5432/wf", m.Database.SessionURL)
	require.Equal(t, []Token{{Name: "ci", Role: RoleClient, Catalogs: []string{"c1"}, TokenSHA256: Mask}}, m.Tokens)
	require.Equal(t, Mask, m.Elasticsearch.Password)
	require.Equal(t, Mask, m.Elasticsearch.APIKey)
	require.Equal(t, "postgres://u:***@dwh/db", m.Warehouse.Connections[0].URL)
	require.Equal(t, "postgres://u:s3cret@dwh/db", c.Warehouse.Connections[0].URL, "the original keeps its secret")

	// The original is untouched, and the copy shares nothing with it.
	require.Equal(t, "postgres://wf:s3cret@db:5432/wf", c.DatabaseURL)
	require.Equal(t, HashToken("0123456789abcdef"), c.Tokens[0].TokenSHA256)
	m.Tokens[0].Catalogs[0] = "changed"
	m.Specs[0] = "changed"
	require.Equal(t, "c1", c.Tokens[0].Catalogs[0])
	require.Equal(t, "specs", c.Specs[0])
	require.Equal(t, c.Origin("database_url"), m.Origin("database_url"))

	// Plain tokens (a Config built by hand) are masked too.
	raw := Default()
	raw.Tokens = []Token{{Name: "x", Role: RoleAdmin, Token: "plain-token-value"}}
	require.Equal(t, Mask, raw.Masked().Tokens[0].Token)

	for _, out := range []func(any) ([]byte, error){yaml.Marshal, json.Marshal} {
		b, err := out(m)
		require.NoError(t, err)
		require.NotContains(t, string(b), "s3cret")
		require.NotContains(t, string(b), c.Tokens[0].TokenSHA256)
	}
}

func TestMarshalYAML(t *testing.T) {
	t.Parallel()
	b, err := yaml.Marshal(Default())
	require.NoError(t, err)
	require.Equal(t, `database_url: ""
database:
    session_url: ""
    read_url: ""
catalog:
    database_url: ""
name: wf
listen: 127.0.0.1:8080
data_dir: ./.wf
specs:
    - specs
log_level: info
log_format: auto
slots: 100
fairness:
    enabled: true
    weights: []
events:
    consume: true
    unmatched_grace: 15m
poll_interval: 1s
heartbeat_interval: 30s
janitor_interval: 30s
maintenance_interval: 1h
visibility_timeout: 5m
grace: 20s
channels:
    task_queued: new_task_queued
    task_status_changed: task_status_changed
    events: wf_events
retention:
    completed: 720h
    failed: 720h
    dead_letter: 2160h
    dead_letter_events: 720h
    partitions_ahead: 3
tokens: []
report:
    bucket_url: ""
    gzip: false
files:
    local_roots: []
tiles:
    cache_url: ""
    cache_grace: 15m
http:
    max_body_bytes: 1048576
    max_json_depth: 64
    read_timeout: 15s
    write_timeout: 1m
outbound:
    allow: []
gcp:
    project: ""
    bucket_template: wf-{project}-{catalog}
    location: EU
    lifecycle_delete_after_days: 0
    lifecycle_archive_after_days: 0
    topic_template: wf-{catalog}-storage
    subscription_template: wf-{catalog}-storage-push
    push_endpoint: ""
    push_audience: ""
    push_service_account: ""
    object_path: '{catalog}/{collection}/{file}'
elasticsearch:
    addresses: []
    username: ""
    password: ""
    api_key: ""
    index_template: wf-{schema}-{collection}
    flush_bytes: 5242880
    workers: 2
    max_retries: 5
warehouse:
    connections: []
secrets:
    keys: []
`, string(b))
}

// TestMarshalRoundTrip checks that what config show prints (YAML or JSON)
// is a valid wf.yaml that loads back to the same configuration.
func TestMarshalRoundTrip(t *testing.T) {
	t.Parallel()
	c, err := Load(Options{WorkDir: t.TempDir(), LookupEnv: envOf(everyEnv)})
	require.NoError(t, err)
	for name, marshal := range map[string]func(any) ([]byte, error){"yaml": yaml.Marshal, "json": json.Marshal} {
		b, err := marshal(c)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "wf."+name)
		require.NoError(t, os.WriteFile(path, b, 0o600))
		back, err := Load(Options{File: path, LookupEnv: envOf(nil)})
		require.NoError(t, err, string(b))
		for _, l := range leaves() {
			require.Equal(t, l.field(c).Interface(), l.field(back).Interface(), "%s via %s", l.key, name)
		}
	}
}
