// Command testdates runs test packages as if it were other dates (make
// test-dates), each package starting at the date itself.
//
//	testdates [-tolerance 5s] [-timeout 15m] [-run RE] [-side-by-side] [-dated] [-jobs N] DATE[@ZONE]... -- PACKAGE...
//
// It compiles the packages' test binaries first (go test -c), so compiling
// does not eat into the date. Then, for each date, it starts a throwaway
// PostgreSQL under datefudge (in ZONE, e.g. Europe/Rome; else the
// environment's TZ), builds the migrated template a minute before the date
// (as a deployment migrated before midnight), and runs the packages one
// after the other: before each, it restarts the server with the offset that
// puts its now() at the date when the package starts, and gives the package
// the same offset for the Go clock (WF_TEST_NOW_OFFSET). A package that
// would start more than -tolerance past its date (the restart took too
// long, three times) fails without running, as does one whose server clock
// disagrees with Go's. Each package's result, how far past its date it
// started and how long it took are printed; the exit code is 1 when any
// package failed at any date.
//
// With -dated (the date sweep of make test), it runs only the tests of the
// packages that write rows at times they compute, found by what they call
// (dated.go), and, to be cheap, with -test.short (tests that build
// hundreds of thousands of rows to check plans skip), a date's packages
// side by side after one restart (as -side-by-side does for a full run),
// and -jobs dates at once, each on a server of its own.
package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/localpg"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testdates", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tolerance := fs.Duration("tolerance", 5*time.Second, "how far past its date a package may start")
	timeout := fs.Duration("timeout", 15*time.Minute, "each package's test timeout (-test.timeout)")
	runRE := fs.String("run", "", "run only the tests matching this regular expression (-test.run)")
	dated := fs.Bool("dated", false, "run only the tests that write rows at times they compute, a date's packages side by side")
	sideBySide := fs.Bool("side-by-side", false, "run a date's packages at once after one restart (implied by -dated)")
	jobs := fs.Int("jobs", 1, "how many dates run at once, each on a server of its own (with -side-by-side or -dated)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
	sep := -1
	for i, a := range rest {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 1 || sep == len(rest)-1 || *jobs < 1 || (*dated && *runRE != "") {
		fmt.Fprintln(stderr, "usage: testdates [-tolerance 5s] [-timeout 15m] [-run RE] [-side-by-side] [-dated] [-jobs N] DATE[@ZONE]... -- PACKAGE... (-run and -dated exclude each other)")
		return 2
	}
	dates, err := parseDates(rest[:sep])
	if err != nil {
		fmt.Fprintln(stderr, "testdates:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	binDir, err := os.MkdirTemp("", "wf-testdates-")
	if err != nil {
		fmt.Fprintln(stderr, "testdates: error creating a folder for the test binaries:", err)
		return 1
	}
	defer os.RemoveAll(binDir)
	// The server's user (when we are root) runs nothing from here, but the
	// packages' tests may start the binaries of other users: keep it open.
	_ = os.Chmod(binDir, 0o755)
	started := time.Now()
	patterns := rest[sep+1:]
	var runs map[string]string // -test.run by import path, with -dated
	if *dated {
		sel, err := findDatedTests(ctx, "", patterns)
		if err != nil {
			fmt.Fprintln(stderr, "testdates:", err)
			return 1
		}
		if len(sel) == 0 {
			fmt.Fprintf(stdout, "testdates: no test of %s writes dated rows\n", strings.Join(patterns, " "))
			return 0
		}
		patterns, runs = nil, map[string]string{}
		for _, s := range sel {
			fmt.Fprintf(stdout, "testdates: %s: %s\n", s.importPath, strings.Join(s.tests, " "))
			patterns = append(patterns, s.importPath)
			runs[s.importPath] = s.runPattern()
		}
		fmt.Fprintf(stdout, "testdates: found the dated tests of %d packages in %s\n", len(sel), time.Since(started).Round(time.Second))
	}
	pkgs, err := compile(ctx, binDir, patterns, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "testdates:", err)
		return 1
	}
	for i := range pkgs {
		if re, ok := runs[pkgs[i].importPath]; ok {
			pkgs[i].runRE = re
		}
	}
	fmt.Fprintf(stdout, "testdates: compiled %d test binaries in %s\n", len(pkgs), time.Since(started).Round(time.Second))

	r := &runner{tolerance: *tolerance, timeout: *timeout, runRE: *runRE, stdout: stdout, sideBySide: *dated || *sideBySide, short: *dated}
	var failedDates []string
	if r.sideBySide {
		failedDates = r.runDates(ctx, dates, pkgs, *jobs)
	} else {
		for _, d := range dates {
			if ctx.Err() != nil {
				break
			}
			if !r.runDate(ctx, d, pkgs) {
				failedDates = append(failedDates, d.String())
			}
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "testdates: interrupted")
		return 1
	}
	if len(failedDates) > 0 {
		fmt.Fprintf(stdout, "testdates: failed at %s\n", strings.Join(failedDates, ", "))
		return 1
	}
	fmt.Fprintf(stdout, "testdates: passed at all %d dates in %s\n", len(dates), time.Since(started).Round(time.Second))
	return 0
}

// date is an instant to run at, and the time zone to run in ("" keeps the
// environment's TZ).
type date struct {
	at   time.Time
	zone string
	text string
}

func (d date) String() string {
	if d.zone == "" {
		return d.text
	}
	return d.text + " (TZ=" + d.zone + ")"
}

// parseDates reads DATE[@ZONE] arguments.
func parseDates(args []string) ([]date, error) {
	var out []date
	for _, a := range args {
		text, zone, _ := strings.Cut(a, "@")
		at, err := time.Parse(time.RFC3339, text)
		if err != nil {
			return nil, fmt.Errorf("error reading the date %q: want an RFC 3339 time such as 2028-02-29T23:59:59+01:00, optionally @ZONE", a)
		}
		if zone != "" {
			if _, err := time.LoadLocation(zone); err != nil {
				return nil, fmt.Errorf("error reading the date %q: unknown time zone %q", a, zone)
			}
		}
		out = append(out, date{at: at, zone: zone, text: text})
	}
	return out, nil
}

// pkg is a compiled test package.
type pkg struct {
	importPath string
	dir        string
	binary     string
	// runRE, when set, is the package's own -test.run (the sweep's).
	runRE string
}

// compile builds the test binaries of the packages matched by patterns
// that have tests into binDir (one go test -c), in the order go list gives.
func compile(ctx context.Context, binDir string, patterns []string, stderr io.Writer) ([]pkg, error) {
	listArgs := append([]string{"list", "-f", "{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}\t{{.Dir}}{{end}}"}, patterns...)
	out, err := exec.CommandContext(ctx, "go", listArgs...).Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return nil, fmt.Errorf("error listing the packages %s: %w: %s", strings.Join(patterns, " "), err, exitErr.Stderr)
		}
		return nil, fmt.Errorf("error listing the packages %s: %w", strings.Join(patterns, " "), err)
	}
	var pkgs []pkg
	var paths []string
	names := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		importPath, dir, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		// go test -c -o DIR names each binary after the last element of
		// the import path.
		name := filepath.Base(importPath) + ".test"
		if other, taken := names[name]; taken {
			return nil, fmt.Errorf("error compiling the tests: %s and %s would both be %s: run them at separate dates' invocations", other, importPath, name)
		}
		names[name] = importPath
		pkgs = append(pkgs, pkg{importPath: importPath, dir: dir, binary: filepath.Join(binDir, name)})
		paths = append(paths, importPath)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no package of %s has tests", strings.Join(patterns, " "))
	}
	cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-c", "-o", binDir + string(filepath.Separator)}, paths...)...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("error compiling the test binaries: %w", err)
	}
	for _, p := range pkgs {
		if _, err := os.Stat(p.binary); err != nil {
			return nil, fmt.Errorf("error compiling the tests of %s: no binary %s: %w", p.importPath, p.binary, err)
		}
	}
	return pkgs, nil
}

// runner runs compiled packages at dates.
type runner struct {
	tolerance time.Duration
	timeout   time.Duration
	runRE     string
	// sideBySide runs a date's packages at once after one restart.
	sideBySide bool
	// short runs the tests with -test.short (the sweep: tests that build
	// hundreds of thousands of rows to check plans skip).
	short bool
	// mu keeps one date's lines together when dates run at once.
	mu     sync.Mutex
	stdout io.Writer
}

// runDates runs the dates, jobs at a time (each writes its lines when it
// ends), and returns those that failed.
func (r *runner) runDates(ctx context.Context, dates []date, pkgs []pkg, jobs int) []string {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed []string
	)
	slots := make(chan struct{}, jobs)
	for _, d := range dates {
		slots <- struct{}{}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			var out bytes.Buffer
			dr := &runner{tolerance: r.tolerance, timeout: r.timeout, runRE: r.runRE, sideBySide: true, short: r.short, stdout: &out}
			ok := dr.runDate(ctx, d, pkgs)
			r.mu.Lock()
			_, _ = r.stdout.Write(out.Bytes())
			r.mu.Unlock()
			if !ok {
				mu.Lock()
				failed = append(failed, d.String())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}

// templateLead is how long before the date the template is migrated.
const templateLead = time.Minute

// runDate runs every package at d on a server of its own and reports
// whether all passed.
func (r *runner) runDate(ctx context.Context, d date, pkgs []pkg) bool {
	fmt.Fprintf(r.stdout, "== as if it were %s\n", d)
	start := time.Now()
	srv, err := startServer(ctx, d)
	if err != nil {
		fmt.Fprintf(r.stdout, "FAIL\t(server)\t%v\n== %s failed after %s\n", err, d, time.Since(start).Round(time.Second))
		return false
	}
	defer srv.remove()
	var failed []string
	if r.sideBySide {
		failed = r.runSideBySide(ctx, srv, d, pkgs)
	} else {
		for _, p := range pkgs {
			if ctx.Err() != nil {
				return false
			}
			if !r.runPackage(ctx, srv, d, p) {
				failed = append(failed, p.importPath)
			}
		}
	}
	took := time.Since(start).Round(time.Second)
	if len(failed) > 0 {
		fmt.Fprintf(r.stdout, "== %s failed in %s: %s\n", d, took, strings.Join(failed, " "))
		return false
	}
	fmt.Fprintf(r.stdout, "== %s passed in %s\n", d, took)
	return true
}

// runSideBySide restarts the server so that the packages start at d, runs
// them all at once, prints their results (in order) and returns those that
// failed.
func (r *runner) runSideBySide(ctx context.Context, srv *server, d date, pkgs []pkg) []string {
	offset, late, err := srv.restartAt(ctx, d.at, r.tolerance)
	if err != nil {
		fmt.Fprintf(r.stdout, "FAIL\t(server)\t%v\n", err)
		return []string{"(server)"}
	}
	outs := make([]bytes.Buffer, len(pkgs))
	passed := make([]bool, len(pkgs))
	var wg sync.WaitGroup
	for i, p := range pkgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one := &runner{tolerance: r.tolerance, timeout: r.timeout, runRE: r.runRE, short: r.short, stdout: &outs[i]}
			passed[i] = one.runBinary(ctx, srv, d, p, offset, late)
		}()
	}
	wg.Wait()
	var failed []string
	for i, p := range pkgs {
		_, _ = r.stdout.Write(outs[i].Bytes())
		if !passed[i] {
			failed = append(failed, p.importPath)
		}
	}
	return failed
}

// runPackage restarts the server so that the package starts at d, runs
// it, prints its result and reports whether it passed.
func (r *runner) runPackage(ctx context.Context, srv *server, d date, p pkg) bool {
	offset, late, err := srv.restartAt(ctx, d.at, r.tolerance)
	if err != nil {
		fmt.Fprintf(r.stdout, "FAIL\t%s\t%v\n", p.importPath, err)
		return false
	}
	return r.runBinary(ctx, srv, d, p, offset, late)
}

// runBinary runs the package's test binary with the clock offset (the
// server is already at it), prints its result and reports whether it
// passed.
func (r *runner) runBinary(ctx context.Context, srv *server, d date, p pkg, offset, late time.Duration) bool {
	args := []string{"-test.count=1", "-test.paniconexit0", "-test.timeout=" + r.timeout.String()}
	if re := cmp.Or(p.runRE, r.runRE); re != "" {
		args = append(args, "-test.run="+re)
	}
	if r.short {
		args = append(args, "-test.short")
	}
	cmd := exec.CommandContext(ctx, p.binary, args...)
	cmd.Dir = p.dir // as go test runs it
	cmd.Env = append(withoutTestEnv(os.Environ()),
		dbtest.EnvURL+"="+srv.cluster.URL("postgres"),
		clock.EnvTestNow+"="+d.text,
		fmt.Sprintf("%s=%d", clock.EnvTestOffset, int64(offset/time.Second)),
	)
	if d.zone != "" {
		cmd.Env = append(cmd.Env, "TZ="+d.zone)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began).Seconds()
	if err != nil {
		_, _ = r.stdout.Write(out.Bytes())
		fmt.Fprintf(r.stdout, "FAIL\t%s\t%.1fs (started %.1fs past its date)\n", p.importPath, took, late.Seconds())
		return false
	}
	fmt.Fprintf(r.stdout, "ok  \t%s\t%.1fs (started %.1fs past its date)\n", p.importPath, took, late.Seconds())
	return true
}

// withoutTestEnv drops the variables a package's run sets itself from env.
func withoutTestEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case dbtest.EnvURL, clock.EnvTestNow, clock.EnvTestOffset:
			continue
		}
		out = append(out, kv)
	}
	return out
}

// server is a throwaway PostgreSQL that is restarted at another offset
// before each package.
type server struct {
	dir     string
	zone    string
	cluster *localpg.Cluster
	// restartTook is how long the last restart took: the next one starts
	// that much (and a second) ahead of the date.
	restartTook time.Duration
}

// startServer creates a cluster for d and migrates the template a minute
// before d.
func startServer(ctx context.Context, d date) (*server, error) {
	dir, err := os.MkdirTemp("", "wf-pg-dates-")
	if err != nil {
		return nil, fmt.Errorf("error creating a folder for the test cluster: %w", err)
	}
	// The server may run as another user (when we are root): let it in.
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("error opening the test cluster folder: %w", err)
	}
	s := &server{dir: dir, zone: d.zone, restartTook: 5 * time.Second}
	offset := wholeSeconds(time.Until(d.at.Add(-templateLead)))
	if err := s.start(ctx, offset); err != nil {
		s.remove()
		return nil, err
	}
	if _, err := dbtest.EnsureTemplate(ctx, s.cluster.URL("postgres")); err != nil {
		s.remove()
		return nil, err
	}
	return s, nil
}

// start starts the cluster (creating it the first time) offset from the
// real clock.
func (s *server) start(ctx context.Context, offset time.Duration) error {
	env, err := dbtest.FakeTimeEnv(offset)
	if err != nil {
		return err
	}
	if s.zone != "" {
		// initdb takes the server's time zone from TZ.
		env = append(env, "TZ="+s.zone)
	}
	c, err := localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(s.dir, "data"), Env: env})
	if err != nil {
		return err
	}
	s.cluster = c
	return nil
}

// restartAt restarts the server so that its clock reads at (and the Go
// clock with the returned offset too) when restartAt returns, and returns
// the offset and how far past at that moment is. It tries three times
// before giving up on a restart that takes longer than the time it allowed
// plus tolerance.
func (s *server) restartAt(ctx context.Context, at time.Time, tolerance time.Duration) (offset, late time.Duration, err error) {
	for attempt := 0; attempt < 3; attempt++ {
		offset = wholeSeconds(at.Sub(time.Now().Add(s.restartTook + time.Second)))
		began := time.Now()
		if err := s.cluster.Stop(ctx); err != nil {
			return 0, 0, err
		}
		if err := s.start(ctx, offset); err != nil {
			return 0, 0, err
		}
		if err := s.checkClock(ctx, offset); err != nil {
			return 0, 0, err
		}
		s.restartTook = time.Since(began)
		if wait := at.Sub(time.Now().Add(offset)); wait > 0 {
			// Early: wait for the date (the offset is whole seconds).
			select {
			case <-ctx.Done():
				return 0, 0, ctx.Err()
			case <-time.After(wait):
			}
		}
		late = time.Now().Add(offset).Sub(at)
		if late <= tolerance {
			return offset, late, nil
		}
	}
	return 0, 0, fmt.Errorf("would start %.1fs past %s (more than %s): restarting the server took %s three times in a row",
		late.Seconds(), at.Format(time.RFC3339), tolerance, s.restartTook.Round(time.Millisecond))
}

// checkClock returns an error when the server's now() is not the real
// clock moved by offset.
func (s *server) checkClock(ctx context.Context, offset time.Duration) error {
	conn, err := pgx.Connect(ctx, s.cluster.URL("postgres"))
	if err != nil {
		return fmt.Errorf("error connecting to the test server: %w", err)
	}
	defer conn.Close(ctx)
	before := time.Now().Add(offset)
	var dbNow time.Time
	if err := conn.QueryRow(ctx, "SELECT now()").Scan(&dbNow); err != nil {
		return fmt.Errorf("error reading the test server's clock: %w", err)
	}
	after := time.Now().Add(offset)
	if dbNow.Before(before.Add(-time.Second)) || dbNow.After(after.Add(time.Second)) {
		return fmt.Errorf("the test server's now() is %s, not %s: datefudge did not move it", dbNow.Format(time.RFC3339), before.Format(time.RFC3339))
	}
	return nil
}

// remove stops the server and removes its folders.
func (s *server) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.cluster != nil {
		_ = s.cluster.Stop(ctx)
		if s.cluster.Moved() {
			_ = os.RemoveAll(s.cluster.DataDir())
		}
	}
	_ = os.RemoveAll(s.dir)
}

// wholeSeconds rounds d down to whole seconds (datefudge and
// WF_TEST_NOW_OFFSET take whole seconds): the clock so set is at most a
// second early, never late.
func wholeSeconds(d time.Duration) time.Duration {
	t := d.Truncate(time.Second)
	if t > d {
		t -= time.Second
	}
	return t
}
