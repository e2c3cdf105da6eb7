package reporters_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/reporters/reportertest"
)

// fakeReporter counts records and returns fixed outputs; it can be made to fail.
type fakeReporter struct {
	mu       sync.Mutex
	name     string
	n        int
	outputs  map[string]any
	fail     error
	finished int
}

func (f *fakeReporter) Report(context.Context, reporters.Envelope) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.n++
	return nil
}

func (f *fakeReporter) Finish(context.Context) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished++
	if f.fail != nil {
		return nil, f.fail
	}
	return f.outputs, nil
}

// closingBuilder is a Builder that is also an io.Closer.
type closingBuilder struct {
	reporters.BuilderFunc
	closed bool
}

func (c *closingBuilder) Close() error { c.closed = true; return nil }

func TestMulti(t *testing.T) {
	t.Parallel()
	require.Equal(t, reporters.Discard{}, reporters.Multi())
	one := &fakeReporter{}
	require.Same(t, one, reporters.Multi(one))

	a := &fakeReporter{outputs: map[string]any{"records": 3, "shared": "a"}}
	b := &fakeReporter{outputs: map[string]any{"report_url": "file:///r", "shared": "b"}}
	m := reporters.Multi(a, b)
	require.NoError(t, reportertest.ReportConcurrently(t.Context(), m, reportertest.Envelopes(50), 5))
	out, err := m.Finish(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]any{"records": 3, "report_url": "file:///r", "shared": "b"}, out)
	require.Equal(t, 50, a.n)
	require.Equal(t, 50, b.n)

	// One failure does not stop the others; errors are joined.
	boom := errors.New("boom")
	bad, good := &fakeReporter{fail: boom}, &fakeReporter{outputs: map[string]any{"x": 1}}
	m = reporters.Multi(bad, good)
	require.ErrorIs(t, m.Report(t.Context(), reportertest.Envelopes(1)[0]), boom)
	require.Equal(t, 1, good.n)
	out, err = m.Finish(t.Context())
	require.ErrorIs(t, err, boom)
	require.Equal(t, map[string]any{"x": 1}, out)
	require.Equal(t, 1, good.finished)
}

func TestFactory(t *testing.T) {
	t.Parallel()
	var built []string
	var mu sync.Mutex
	builder := func(name string) reporters.BuilderFunc {
		return func(task reporters.TaskInfo) (reporters.Reporter, error) {
			mu.Lock()
			defer mu.Unlock()
			built = append(built, name+":"+task.TaskType)
			return &fakeReporter{name: name, outputs: map[string]any{name: true}}, nil
		}
	}
	gcs := &closingBuilder{BuilderFunc: builder(reporters.NameGCSDetailed)}
	f, err := reporters.NewFactory(map[string]reporters.Builder{
		reporters.NameDatabase:    builder(reporters.NameDatabase),
		reporters.NameGCSDetailed: gcs,
	})
	require.NoError(t, err)
	require.Equal(t, []string{"database", "gcs_detailed"}, f.Names())
	task := reporters.TaskInfo{ID: uuid.Must(uuid.NewV7()), SchemaName: "s", TaskType: "t"}

	rep, err := f.New(nil, task)
	require.NoError(t, err)
	require.Equal(t, reporters.Discard{}, rep)

	rep, err = f.New([]string{"database"}, task)
	require.NoError(t, err)
	require.Equal(t, "database", rep.(*fakeReporter).name)

	rep, err = f.New([]string{"gcs_detailed", "database", "gcs_detailed"}, task)
	require.NoError(t, err)
	out, err := rep.Finish(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]any{"database": true, "gcs_detailed": true}, out)
	require.Equal(t, []string{"database:t", "gcs_detailed:t", "database:t"}, built, "a name listed twice is built once")

	_, err = f.New([]string{"database", "s3"}, task)
	require.ErrorContains(t, err, `unknown reporter "s3": want one of database, gcs_detailed`)
	require.NoError(t, f.Check([]string{"database", "gcs_detailed"}))
	require.Error(t, f.Check([]string{"email"}))

	require.NoError(t, f.Close())
	require.True(t, gcs.closed)

	_, err = reporters.NewFactory(map[string]reporters.Builder{"": builder("x"), "y": nil})
	require.ErrorContains(t, err, "a reporter name is empty")
	require.ErrorContains(t, err, `reporter "y" has no builder`)
}

func TestDiscard(t *testing.T) {
	t.Parallel()
	out, err := reporters.Discard{}.Finish(t.Context())
	require.NoError(t, err)
	require.Nil(t, out)
	require.NoError(t, reporters.Discard{}.Report(t.Context(), reportertest.Envelopes(1)[0]))
}
