package redact_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/redact"
)

func TestFolders(t *testing.T) {
	t.Parallel()
	f := redact.NewFolders([]string{"/srv/wf/files", "relative/ignored"}, map[string]string{"file:///srv/wf/reports": "reports",
		"/tmp": "tmp", "gs://bucket/x": "bucket", "/": "root", "/srv/wf/files/s_a/inner": "inner"})
	ownA := func(tenant string) bool { return tenant == "s_a" }
	for in, want := range map[string]string{
		"error opening /srv/wf/files/s_a/x/y.geojson: not found":         "error opening x/y.geojson: not found",
		"error opening /srv/wf/files/s_b/x/y.geojson: not found":         "error opening <files>/s_b/x/y.geojson: not found",
		`{"report_url":"file:///srv/wf/reports/s_a/ingestion/1.ndjson"}`: `{"report_url":"<reports>/s_a/ingestion/1.ndjson"}`,
		"file:///srv/wf/files/s_a/out.ndjson":                            "out.ndjson",
		"the folder /srv/wf/files/s_a is full":                           "the folder <files>/s_a is full",
		"the root /srv/wf/files: read-only":                              "the root <files>: read-only",
		"spill /tmp/wf-spill-1 and /srv/wf/reports":                      "spill <tmp>/wf-spill-1 and <reports>",
		"/srv/wf/files2/x and /tmpfoo stay":                              "/srv/wf/files2/x and /tmpfoo stay",
		"relative/ignored/x, /srv/wf and /tasks/1 too":                   "relative/ignored/x, /srv/wf and /tasks/1 too",
		"gs://bucket/x/y": "gs://bucket/x/y",
		"/srv/wf/files/s_a/inner/x, /srv/wf/files/s_a/innerx": "<inner>/x, innerx",
		"": "",
	} {
		require.Equal(t, want, f.String(in, ownA), in)
	}
	require.Equal(t, "<files>/s_a/x", f.String("/srv/wf/files/s_a/x", nil), "a reader of no tenant")
	var none *redact.Folders
	require.Equal(t, "/srv/wf/files/x", none.String("/srv/wf/files/x", nil))
	require.Equal(t, "/srv/wf/files/x", redact.NewFolders(nil, nil).String("/srv/wf/files/x", nil))
}
