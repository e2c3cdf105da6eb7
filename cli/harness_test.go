package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// wfEnv is one test's wf installation: its own database, spec folder and
// data folder (where file:// reports go), and the Options its in-process
// commands run with.
type wfEnv struct {
	t     *testing.T
	url   string
	specs string
	data  string
	// config is the wf.yaml naming the database, specs and data folder.
	config string
	opts   Options
}

// newWFEnv creates a database and writes the spec files (name → YAML).
func newWFEnv(t *testing.T, specs map[string]string) *wfEnv {
	t.Helper()
	e := &wfEnv{t: t, url: dbtest.NewDatabase(t), specs: t.TempDir(), data: t.TempDir()}
	for name, body := range specs {
		require.NoError(t, os.WriteFile(filepath.Join(e.specs, name), []byte(body), 0o644))
	}
	e.config = filepath.Join(t.TempDir(), "wf.yaml")
	// Test receivers and sources listen on loopback, which outbound
	// requests reach only when allow-listed.
	cfg := fmt.Sprintf("database_url: %q\ndata_dir: %q\nspecs: [%q]\nlog_format: json\nlog_level: warn\noutbound: {allow: [127.0.0.0/8]}\n",
		e.url, e.data, e.specs)
	require.NoError(t, os.WriteFile(e.config, []byte(cfg), 0o600))
	e.opts.Registry = testRegistry(t)
	return e
}

// global returns the global flags that point a command at this installation.
func (e *wfEnv) global() []string {
	return []string{"wf", "--config", e.config}
}

// env returns the environment that points a wf process at this installation.
func (e *wfEnv) env() []string {
	return []string{"WF_CONFIG=" + e.config}
}

// run runs one wf command in-process and returns its exit code and output.
func (e *wfEnv) run(args ...string) (int, string, string) {
	e.t.Helper()
	var out, errOut bytes.Buffer
	code := MainWith(e.t.Context(), append(e.global(), args...), &out, &errOut, e.opts)
	return code, out.String(), errOut.String()
}

// exec runs `wf exec` with the installation's specs.
func (e *wfEnv) exec(args ...string) (int, string, string) {
	e.t.Helper()
	return e.run(append([]string{"exec", "--heartbeat-interval", "200ms"}, args...)...)
}

// enqueue creates a task with inputs and returns its id.
func (e *wfEnv) enqueue(taskType string, inputs map[string]any) uuid.UUID {
	e.t.Helper()
	b, err := json.Marshal(inputs)
	require.NoError(e.t, err)
	path := filepath.Join(e.t.TempDir(), "inputs.json")
	require.NoError(e.t, os.WriteFile(path, b, 0o644))
	return e.runID("task_id", "enqueue", "--json", path, "--format", "json", taskType)
}

// runID runs a wf command that prints a JSON object, requires it to
// succeed and returns the id in the object's field.
func (e *wfEnv) runID(field string, args ...string) uuid.UUID {
	e.t.Helper()
	code, out, errOut := e.run(args...)
	require.Equal(e.t, ExitOK, code, errOut)
	var got map[string]json.RawMessage
	require.NoError(e.t, json.Unmarshal([]byte(out), &got), out)
	var id uuid.UUID
	require.NoError(e.t, json.Unmarshal(got[field], &id), out)
	return id
}

// show reads a task with `wf tasks show --format json`.
func (e *wfEnv) show(id uuid.UUID) wftype.Task {
	e.t.Helper()
	code, out, errOut := e.run("tasks", "show", "--format", "json", id.String())
	require.Equal(e.t, ExitOK, code, errOut)
	var t wftype.Task
	require.NoError(e.t, json.Unmarshal([]byte(out), &t), out)
	return t
}

// waitFor polls the task until cond holds.
func (e *wfEnv) waitFor(id uuid.UUID, what string, cond func(wftype.Task) bool) wftype.Task {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		t := e.show(id)
		if cond(t) {
			return t
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("task %s never %s; it is %s, progress %s, error %v", id, what, t.Status, t.Progress, deref(t.Error))
		}
		time.Sleep(50 * time.Millisecond) // wall time: polling a task that real wf processes run
	}
}

// waitProgress waits until the task's database progress counts total records.
func (e *wfEnv) waitProgress(id uuid.UUID, total int) wftype.Task {
	e.t.Helper()
	return e.waitFor(id, fmt.Sprintf("showed progress total %d", total), func(t wftype.Task) bool {
		var p struct {
			Total int `json:"total"`
		}
		return len(t.Progress) > 0 && json.Unmarshal(t.Progress, &p) == nil && p.Total == total
	})
}

// waitEnded waits until the task is terminal.
func (e *wfEnv) waitEnded(id uuid.UUID) wftype.Task {
	e.t.Helper()
	return e.waitFor(id, "ended", func(t wftype.Task) bool { return t.Status.Terminal() })
}

// engine runs `wf run` in-process until the test ends; extra flags go to
// the run command.
func (e *wfEnv) engine(extra ...string) {
	e.t.Helper()
	args := append(e.global(), append([]string{"run", "--listen", "127.0.0.1:0",
		"--poll-interval", "100ms", "--heartbeat-interval", "300ms", "--grace", "5s"}, extra...)...)
	inproc.Start(e.t, "wf run", func(ctx context.Context, stdout, stderr io.Writer) int {
		return MainWith(ctx, args, stdout, stderr, e.opts)
	})
}

// readReport reads the NDJSON report a task's outputs point at (file://).
func readReport(t *testing.T, task wftype.Task) []reporters.Envelope {
	t.Helper()
	var out struct {
		ReportURL     string `json:"report_url"`
		ReportRecords int    `json:"report_records"`
	}
	require.NoError(t, json.Unmarshal(task.Outputs, &out), string(task.Outputs))
	require.NotEmpty(t, out.ReportURL, "outputs %s carry no report_url", task.Outputs)
	u, err := url.Parse(out.ReportURL)
	require.NoError(t, err)
	require.Equal(t, "file", u.Scheme)
	require.True(t, strings.HasSuffix(u.Path, "/system/"+task.TaskType+"/"+task.ID.String()+".ndjson"), u.Path)
	f, err := os.Open(u.Path)
	require.NoError(t, err)
	defer f.Close()
	var envs []reporters.Envelope
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		env, err := reporters.ValidateEnvelope(sc.Bytes())
		require.NoError(t, err, "report line %d", len(envs)+1)
		envs = append(envs, env)
	}
	require.NoError(t, sc.Err())
	require.Len(t, envs, out.ReportRecords)
	return envs
}

// envelope is the i-th record a test handler reports.
func envelope(i int) reporters.Envelope {
	env := reporters.Envelope{Status: reporters.RecordSuccess, Record: reporters.Record{
		Type: "Feature", ID: fmt.Sprintf("r%d", i),
		Properties: map[string]any{"n": json.Number(fmt.Sprint(i))}, Stats: map[string]any{}, System: map[string]any{},
	}}
	if i%3 == 2 {
		msg := "odd one out"
		env.Status, env.Message = reporters.RecordRejected, &msg
	}
	return env
}

// requireEnvelopes checks a report holds envelope(1)…envelope(n) in order.
func requireEnvelopes(t *testing.T, n int, got []reporters.Envelope) {
	t.Helper()
	require.Len(t, got, n)
	for i, env := range got {
		want := envelope(i + 1)
		require.Equal(t, want.Status, env.Status, "record %d", i+1)
		require.Equal(t, want.Record.ID, env.Record.ID, "record %d", i+1)
		require.Equal(t, want.Record.Properties, env.Record.Properties, "record %d", i+1)
	}
}

// emitInputs are the inputs of the test handler "emit": it reports First
// records, waits for the file Gate (when set), reports Then more, and
// returns {"emitted": First+Then}.
type emitInputs struct {
	First int    `json:"first"`
	Then  int    `json:"then"`
	Gate  string `json:"gate"`
}

// testRegistry is the default registry plus "emit".
func testRegistry(t *testing.T) *builtin.Registry {
	reg := builtin.NewRegistry()
	require.NoError(t, reg.Register("emit", func(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
		var in emitInputs
		if err := json.Unmarshal(task.Inputs, &in); err != nil {
			return nil, wftype.Permanent(err)
		}
		for i := 1; i <= in.First+in.Then; i++ {
			if i == in.First+1 && in.Gate != "" {
				if err := waitFile(ctx, in.Gate); err != nil {
					return nil, err
				}
			}
			if err := rep.Report(ctx, envelope(i)); err != nil {
				return nil, err
			}
		}
		return json.RawMessage(fmt.Sprintf(`{"emitted":%d}`, in.First+in.Then)), nil
	}))
	return reg
}

// waitFile waits until path exists or ctx ends.
func waitFile(ctx context.Context, path string) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// openGate creates the gate file a handler waits for.
func openGate(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, nil, 0o644))
}

// wfBuild is the wf command built for this test binary, in a folder
// TestMain removes.
var wfBuild struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// buildWF builds the wf command once per test binary (for the processes a
// fake Cloud Run execution starts) and returns its path.
func buildWF(t *testing.T) string {
	t.Helper()
	wfBuild.once.Do(func() {
		wfBuild.dir, wfBuild.err = os.MkdirTemp("", "wf-cli-test-")
		if wfBuild.err != nil {
			return
		}
		wfBuild.bin = filepath.Join(wfBuild.dir, "wf")
		if out, err := exec.Command("go", "build", "-o", wfBuild.bin, "github.com/wfhq/wf").CombinedOutput(); err != nil {
			wfBuild.err = fmt.Errorf("error building wf: %w\n%s", err, out)
		}
	})
	require.NoError(t, wfBuild.err)
	return wfBuild.bin
}

// removeWFBuild removes the folder of the built wf command, if any.
func removeWFBuild() {
	if wfBuild.dir != "" {
		_ = os.RemoveAll(wfBuild.dir)
	}
}

// writeFile writes a small file.
func writeFile(path, body string) error { return os.WriteFile(path, []byte(body), 0o644) }
