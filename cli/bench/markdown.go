package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// The generated part of BENCHMARKS.md sits between these markers; the prose
// around them (what limits a target, profiles) is written by people.
const (
	markBegin = "<!-- wf bench: begin generated (make bench rewrites this part) -->"
	markEnd   = "<!-- wf bench: end generated -->"
)

// UpdateMarkdown rewrites the generated part of the file at path with the
// suite's tables, keeping the rest; a file without markers gets them
// appended (a missing file is created).
func UpdateMarkdown(path string, s *Suite) error {
	return replaceGenerated(path, markBegin, markEnd, Markdown(s))
}

// replaceGenerated puts gen between the begin and end markers of the file
// at path, keeping the rest; a file without them gets them appended (a
// missing file is created).
func replaceGenerated(path, begin, end, gen string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("error reading %s: %w", path, err)
	}
	text := string(old)
	if text == "" {
		text = "# Benchmarks\n\n"
	}
	gen = begin + "\n" + gen + end
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i >= 0 && j > i {
		text = text[:i] + gen + text[j+len(end):]
	} else {
		text = strings.TrimRight(text, "\n") + "\n\n" + gen + "\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	return nil
}

// Markdown renders the suite: targets, every run, machine and settings.
func Markdown(s *Suite) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("Measured by `make bench` (`wf bench suite`) on %s, in %.0f s.\n\n", s.Started.Format("2006-01-02 15:04 MST"), s.Seconds)

	p("### Targets\n\n| target | goal | measured | |\n|---|---|---|---|\n")
	for _, t := range s.Targets {
		mark := "❌ missed"
		if t.Met {
			mark = "✅ met"
		} else if t.Measured == "not measured" {
			mark = "—"
		}
		p("| %s | %s | %s | %s |\n", t.Name, t.Goal, t.Measured, mark)
	}

	p("\n### Runs\n\n")
	p("| run | tasks | enqueued/s | completed/s | latency p50 / p95 / p99 (ms) | commits/task | bench CPU s | instances CPU s | PostgreSQL CPU s | machine busy | resident MiB (instances: peak) |\n")
	p("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, run := range s.Runs {
		r := run.Result
		if r == nil {
			p("| %s | error: %s | | | | | | | | | |\n", run.Name, oneLine(run.Error, 80))
			continue
		}
		switch r.Mode {
		case ModeScale, ModeIdle:
			continue
		}
		lat, latKind := r.StartLatency, "enqueue→start"
		if lat == nil {
			lat, latKind = r.RunLatency, "claim→complete"
		}
		latText := ""
		if lat != nil {
			latText = fmt.Sprintf("%s %.2f / %.2f / %.2f", latKind, lat.P50, lat.P95, lat.P99)
		}
		if r.CompleteLatency != nil {
			latText += fmt.Sprintf("; enqueue→complete %.2f / %.2f / %.2f", r.CompleteLatency.P50, r.CompleteLatency.P95, r.CompleteLatency.P99)
		}
		name := fmt.Sprintf("%s (%s, %d slots", run.Name, r.instancesText(), r.Slots)
		if r.BacklogFlat != nil {
			name += fmt.Sprintf(", backlog flat: %t, max %d", *r.BacklogFlat, r.BacklogMax)
		}
		name += ")"
		rss := r.CPU.BenchRSSMB
		if r.Instances > 0 {
			rss = r.CPU.InstancesPeakRSSMB
		}
		p("| %s | %d | %.0f | %.0f | %s | %.4f | %.1f | %.1f | %.1f | %.0f%% | %.0f |\n",
			name, r.Completed, r.InsertRate, r.CompleteRate, latText, r.CommitsPerTask,
			r.CPU.BenchUserSeconds+r.CPU.BenchSysSeconds, r.CPU.InstancesUserSeconds+r.CPU.InstancesSysSeconds,
			r.CPU.PostgresSeconds, r.CPU.MachineBusy*100, rss)
	}

	if r := s.run("scale"); r != nil {
		p("\n### Claim latency against history (scale)\n\n")
		p("A claim of %d tasks from a backlog of new ones, timed %d times (each in a transaction rolled back, so the disk flush of a commit does not blur the statement's cost) after a VACUUM ANALYZE, with finished tasks spread over the four months before this one.\n\n",
			firstBatch(r), countOf(r))
		p("| finished rows | claim p50 (ms) | p95 | p99 | history built in |\n|---:|---:|---:|---:|---:|\n")
		for _, pt := range r.Scale {
			p("| %d | %.3f | %.3f | %.3f | %.0f s |\n", pt.FinishedRows, pt.Claim.P50, pt.Claim.P95, pt.Claim.P99, pt.BuildSeconds)
		}
		if n := len(r.Scale); n > 0 && r.Scale[n-1].Explain != "" {
			p("\n<details><summary>EXPLAIN (ANALYZE, BUFFERS) of a claim with %d finished rows</summary>\n\n```\n%s\n```\n</details>\n",
				r.Scale[n-1].FinishedRows, r.Scale[n-1].Explain)
		}
	}

	if r := s.run("idle"); r != nil && r.Idle != nil {
		in := r.Idle
		p("\n### Idle `wf run`\n\n")
		p("%d instances, poll interval %.0f s, watched %.0f s as followers, then %.0f s with one of them leading; statements counted with %s.\n\n",
			in.Followers, in.PollInterval, in.Window, in.Window, in.CountedBy)
		p("- resident memory per instance: %s MiB (max %.1f)\n", joinFloats(in.RSSMB), in.MaxRSSMB)
		p("- statements per poll interval: %.2f per follower, %.2f for the leader\n", in.FollowerQueriesPerPoll, in.LeaderQueriesPerPoll)
		for _, st := range in.FollowerStatements {
			p("  - follower: %d × `%s`\n", st.Calls, oneLine(st.Query, 140))
		}
	}

	p("\n### Machine and PostgreSQL\n\n")
	m := s.Machine
	p("- %d CPUs, %s; %d MiB memory; kernel %s; %s, %s\n", m.CPUs, m.CPUModel, m.MemoryMB, m.Kernel, m.OS, m.GoVersion)
	p("- %s (a local cluster started by the bench: %t)\n", s.Postgres.Version, s.Postgres.Local)
	p("- settings:")
	for _, k := range reportedSettings {
		if v, ok := s.Postgres.Settings[k]; ok && v != "" {
			p(" `%s=%s`", k, v)
		}
	}
	p("\n")
	return b.String()
}

func firstBatch(r *Result) int {
	if len(r.Scale) == 0 {
		return 0
	}
	return r.Scale[0].Batch
}

func countOf(r *Result) int {
	if len(r.Scale) == 0 || r.Scale[0].Claim == nil {
		return 0
	}
	return r.Scale[0].Claim.Count
}

func joinFloats(v []float64) string {
	parts := make([]string, len(v))
	for i, f := range v {
		parts[i] = fmt.Sprintf("%.1f", f)
	}
	return strings.Join(parts, ", ")
}
