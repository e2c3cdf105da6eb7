package gcsreporter_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/reporters/gcsreporter"
	"github.com/wfhq/wf/reporters/reportertest"
)

// testBucket is the bucket created in every fake GCS server.
const testBucket = "wf-reports"

// smallMemory makes the suite's reports spill to a temporary file after a
// few dozen records, so both halves of the buffer are exercised.
const smallMemory = 16 << 10

// backend is one destination under test: how to configure a store for it
// and how to read an object back without going through the reporter.
type backend struct {
	cfg  gcsreporter.Config
	read func(t *testing.T, reportURL string) []byte
}

// fileBackend writes under a new temporary folder.
func fileBackend(t *testing.T) backend {
	t.Helper()
	dir := t.TempDir()
	return backend{
		cfg: gcsreporter.Config{BucketURL: "file://" + filepath.ToSlash(dir), TempDir: t.TempDir()},
		read: func(t *testing.T, reportURL string) []byte {
			t.Helper()
			u, err := url.Parse(reportURL)
			require.NoError(t, err)
			require.Equal(t, "file", u.Scheme)
			require.True(t, strings.HasPrefix(u.Path, filepath.ToSlash(dir)+"/"), "%s is under %s", reportURL, dir)
			b, err := os.ReadFile(filepath.FromSlash(u.Path))
			require.NoError(t, err)
			return b
		},
	}
}

// gcsBackend starts an in-process fake GCS server on loopback HTTP and
// points the real client at it; objects are read back from the server's
// own storage.
func gcsBackend(t *testing.T) backend {
	t.Helper()
	srv := gcptest.NewFakeGCS(t, testBucket)
	return backend{
		cfg: gcsreporter.Config{
			BucketURL: "gs://" + testBucket + "/reports/v1",
			Endpoint:  srv.URL() + "/storage/v1/",
			TempDir:   t.TempDir(),
		},
		read: func(t *testing.T, reportURL string) []byte {
			t.Helper()
			obj, err := srv.GetObject(testBucket, objectName(t, reportURL, testBucket))
			require.NoError(t, err, "object %s", reportURL)
			return obj.Content
		},
	}
}

// openStore opens a store on cfg, closed at the end of the test.
func openStore(t *testing.T, cfg gcsreporter.Config) *gcsreporter.Store {
	t.Helper()
	s, err := gcsreporter.Open(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// decodeReport decodes an object's NDJSON (gunzipping it first when gz).
func decodeReport(t *testing.T, data []byte, gz bool) []reporters.Envelope {
	t.Helper()
	var r io.Reader = bytes.NewReader(data)
	if gz {
		zr, err := gzip.NewReader(r)
		require.NoError(t, err)
		r = zr
	}
	var out []reporters.Envelope
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		env, err := reporters.ValidateEnvelope(sc.Bytes())
		require.NoError(t, err, "line %d", len(out)+1)
		out = append(out, env)
	}
	require.NoError(t, sc.Err())
	return out
}

func TestSuite(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend, store *gcsreporter.Store, gz bool) {
		reportertest.Run(t, reportertest.Harness{
			New: func(t *testing.T, task reporters.TaskInfo) reporters.Reporter {
				r, err := store.NewReporter(task)
				require.NoError(t, err)
				return r
			},
			Check: func(t *testing.T, task reporters.TaskInfo, outputs map[string]any, want []reporters.Envelope) {
				reportURL := store.URL(store.Key(task))
				require.Equal(t, map[string]any{"report_url": reportURL, "report_records": int64(len(want))}, outputs)
				ext := ".ndjson"
				if gz {
					ext = ".ndjson.gz"
				}
				require.True(t, strings.HasSuffix(reportURL, "/"+task.SchemaName+"/"+task.TaskType+"/"+task.ID.String()+ext), reportURL)
				got := decodeReport(t, be.read(t, reportURL), gz)
				reportertest.RequireSameEnvelopes(t, want, got)
			},
		})
	})
}

func TestRoundTripKeepsOrderAndBytes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend, store *gcsreporter.Store, gz bool) {
		task := reporters.TaskInfo{ID: uuid.Must(uuid.NewV7()), SchemaName: "tenant_a", TaskType: "ingest.features"}
		rep, err := store.NewReporter(task)
		require.NoError(t, err)

		// One goroutine: the report keeps the order of the records.
		envs := reportertest.Envelopes(3000)
		var want bytes.Buffer
		for _, env := range envs {
			require.NoError(t, rep.Report(t.Context(), env))
			b, err := json.Marshal(env)
			require.NoError(t, err)
			want.Write(b)
			want.WriteByte('\n')
		}
		out, err := rep.Finish(t.Context())
		require.NoError(t, err)
		require.EqualValues(t, len(envs), out["report_records"])

		data := be.read(t, out["report_url"].(string))
		if gz {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			require.NoError(t, err)
			data, err = io.ReadAll(zr)
			require.NoError(t, err)
		}
		require.Equal(t, want.String(), string(data))
		got := decodeReport(t, data, false)
		require.Len(t, got, len(envs))
		for i := range envs {
			reportertest.RequireSameEnvelopes(t, envs[i:i+1], got[i:i+1])
		}
	})
}

// eachBackend runs test, in parallel subtests, on a store over each backend
// (a folder, the fake GCS server), with and without gzip.
func eachBackend(t *testing.T, test func(t *testing.T, be backend, store *gcsreporter.Store, gz bool)) {
	// "live" is a real bucket under make test-live (liveBackend), skipped
	// otherwise: the same checks, on the fake and on Cloud Storage.
	for name, newBackend := range map[string]func(*testing.T) backend{"File": fileBackend, "FakeGCS": gcsBackend, "live": liveBackend} {
		for _, gz := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/Gzip=%t", name, gz), func(t *testing.T) {
				t.Parallel()
				be := newBackend(t)
				cfg := be.cfg
				cfg.Gzip, cfg.MemoryLimit = gz, smallMemory
				test(t, be, openStore(t, cfg), gz)
			})
		}
	}
}

func TestSpilledFileIsRemoved(t *testing.T) {
	t.Parallel()
	be := fileBackend(t)
	cfg := be.cfg
	cfg.MemoryLimit = 1 << 10
	store := openStore(t, cfg)
	rep, err := store.NewReporter(reporters.TaskInfo{ID: uuid.Must(uuid.NewV7()), SchemaName: "s", TaskType: "t"})
	require.NoError(t, err)
	require.NoError(t, reportertest.ReportConcurrently(t.Context(), rep, reportertest.Envelopes(200), 4))
	_, err = rep.Finish(t.Context())
	require.NoError(t, err)
	left, err := os.ReadDir(cfg.TempDir)
	require.NoError(t, err)
	require.Empty(t, left, "no temporary file outlives the report")
}

func TestLocalFolderByDefault(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "reports", "nested")
	store := openStore(t, gcsreporter.Config{LocalDir: dir})
	task := reporters.TaskInfo{ID: uuid.Must(uuid.NewV7()), SchemaName: "system", TaskType: "cleanup"}
	rep, err := store.NewReporter(task)
	require.NoError(t, err)
	require.NoError(t, rep.Report(t.Context(), reporters.Success(reporters.Record{Type: "Feature", ID: "1"})))
	out, err := rep.Finish(t.Context())
	require.NoError(t, err)
	path := filepath.Join(dir, "system", "cleanup", task.ID.String()+".ndjson")
	require.Equal(t, (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String(), out["report_url"])
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"SUCCESS","message":null,"record":{"type":"Feature","id":"1","geometry":null,"properties":{},"stats":{},"system":{}}}`, string(data))
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no metadata side files next to the report")
}

func TestKeysAndURLs(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("019e6318-0000-7000-8000-000000000001")
	task := reporters.TaskInfo{ID: id, SchemaName: "tenant_a", TaskType: "ingest"}
	be := gcsBackend(t)
	for _, tc := range []struct {
		bucketURL string
		gz        bool
		key, url  string
	}{
		{bucketURL: "gs://" + testBucket, key: "tenant_a/ingest/" + id.String() + ".ndjson", url: "gs://wf-reports/tenant_a/ingest/" + id.String() + ".ndjson"},
		{bucketURL: "gs://" + testBucket + "/a/b/", gz: true, key: "a/b/tenant_a/ingest/" + id.String() + ".ndjson.gz", url: "gs://wf-reports/a/b/tenant_a/ingest/" + id.String() + ".ndjson.gz"},
	} {
		cfg := be.cfg
		cfg.BucketURL, cfg.Gzip = tc.bucketURL, tc.gz
		s := openStore(t, cfg)
		require.Equal(t, tc.key, s.Key(task))
		require.Equal(t, tc.url, s.URL(s.Key(task)))
	}

	s := openStore(t, gcsreporter.Config{LocalDir: t.TempDir()})
	for _, bad := range []reporters.TaskInfo{
		{ID: id, SchemaName: "", TaskType: "t"},
		{ID: id, SchemaName: "s", TaskType: "../t"},
		{ID: id, SchemaName: "..", TaskType: "t"},
	} {
		_, err := s.NewReporter(bad)
		require.ErrorContains(t, err, "cannot name a folder of the report")
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for cfg, want := range map[gcsreporter.Config]string{
		{BucketURL: "s3://bucket"}:                      `scheme "s3" is not supported, want gs:// or file://`,
		{BucketURL: "gs:///prefix"}:                     "the bucket name is missing",
		{BucketURL: "file://relative/dir"}:              "want file:///absolute/folder",
		{BucketURL: "gs://b?x=1", Endpoint: "http://x"}: "query parameters are not supported",
		{MemoryLimit: -1}:                               "memory limit is -1",
	} {
		_, err := gcsreporter.Open(t.Context(), cfg)
		require.ErrorContains(t, err, want)
		require.ErrorContains(t, err, "invalid detailed report configuration")
	}
}

func TestFinishCancelledDuringUpload(t *testing.T) {
	t.Parallel()
	srv := gcptest.NewFakeGCS(t, testBucket)
	target, err := url.Parse(srv.URL())
	require.NoError(t, err)

	// A proxy in front of the fake cancels Finish's context as soon as the
	// upload reaches it, and holds the upload until the client gives up.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var uploads atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/upload/") {
			uploads.Add(1)
			cancel()
			// The server notices the client hanging up only once the body is
			// read; read it aside so a client that stops sending cannot block us.
			go func() { _, _ = io.Copy(io.Discard, r.Body) }()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	store := openStore(t, gcsreporter.Config{BucketURL: "gs://" + testBucket, Endpoint: proxy.URL + "/storage/v1/", TempDir: t.TempDir(), MemoryLimit: smallMemory})
	task := reporters.TaskInfo{ID: uuid.Must(uuid.NewV7()), SchemaName: "s", TaskType: "t"}
	rep, err := store.NewReporter(task)
	require.NoError(t, err)
	envs := reportertest.Envelopes(500)
	require.NoError(t, reportertest.ReportConcurrently(t.Context(), rep, envs, 2))

	_, err = rep.Finish(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "error writing report gs://"+testBucket+"/s/t/")
	require.Positive(t, uploads.Load(), "the upload had started")
	_, err = srv.GetObject(testBucket, store.Key(task))
	require.Error(t, err, "a cancelled upload leaves no object")
}

// objectName is the name of the object reportURL (gs://bucket/…) points to.
func objectName(t *testing.T, reportURL, bucket string) string {
	t.Helper()
	u, err := url.Parse(reportURL)
	require.NoError(t, err)
	require.Equal(t, "gs", u.Scheme)
	require.Equal(t, bucket, u.Host)
	return strings.TrimPrefix(u.Path, "/")
}
