package redact_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/redact"
)

func TestString(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://alice:s3cret@files.example.com/a.geojson": "https://alice:REDACTED@files.example.com/a.geojson",
		"https://alice@files.example.com/a.geojson":        "https://alice@files.example.com/a.geojson",
		"https://storage.googleapis.com/b/o.csv?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=sa%40p.iam&X-Goog-Signature=abc123": "https://storage.googleapis.com/b/o.csv?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=REDACTED&X-Goog-Signature=REDACTED",
		"https://h/x?token=t0k&page=2":                                        "https://h/x?token=REDACTED&page=2",
		"https://h/x?access_token=a&sig=b&AWSAccessKeyId=c&X-Amz-Signature=d": "https://h/x?access_token=REDACTED&sig=REDACTED&AWSAccessKeyId=c&X-Amz-Signature=REDACTED",
		`error fetching https://u:p@h/x?token=t: 403 Forbidden`:               `error fetching https://u:REDACTED@h/x?token=REDACTED: 403 Forbidden`,
		"no url here":                 "no url here",
		"gs://bucket/key/object.json": "gs://bucket/key/object.json",
		`"https://h/x?api_key=k"`:     `"https://h/x?api_key=REDACTED"`,
	} {
		got := redact.String(in)
		require.Equal(t, want, got, in)
		require.NotContains(t, got, "s3cret")
	}
	require.Nil(t, redact.Ptr(nil))
}

func TestJSON(t *testing.T) {
	t.Parallel()
	in := json.RawMessage(`{"source": "https://u:pw@h/a.csv?token=t", "n": 12345678901234567890, "list": ["x", "https://h/b?sig=s"], "nested": {"k": "plain"}}`)
	var got map[string]any
	require.NoError(t, json.Unmarshal(redact.JSON(in), &got))
	require.Equal(t, "https://u:REDACTED@h/a.csv?token=REDACTED", got["source"])
	require.Equal(t, []any{"x", "https://h/b?sig=REDACTED"}, got["list"])
	require.Equal(t, 12345678901234567890.0, got["n"])
	untouched := json.RawMessage(`{"a":  "https://h/x?page=1"}`)
	require.Equal(t, string(untouched), string(redact.JSON(untouched)), "nothing to hide: the bytes as they were")
	require.Equal(t, "not json ://", string(redact.JSON(json.RawMessage("not json ://"))))
}
