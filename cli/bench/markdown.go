package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// generatedPart is a part of BENCHMARKS.md that a command writes, between
// its begin and end markers; the prose around it (what limits a target,
// profiles) is written by people.
type generatedPart struct{ begin, end string }

// The suite's part (make bench) and the side-by-side comparison's
// (cli/bench/riverbench).
var (
	suitePart   = generatedPart{"<!-- wf bench: begin generated (make bench rewrites this part) -->", "<!-- wf bench: end generated -->"}
	comparePart = generatedPart{"<!-- wf bench compare: begin generated (make bench rewrites this part) -->", "<!-- wf bench compare: end generated -->"}
)

// UpdateMarkdown rewrites the generated part of the file at path with the
// suite's tables, keeping the rest; a file without markers gets them
// appended (a missing file is created).
func UpdateMarkdown(path string, s *Suite) error { return suitePart.replace(path, Markdown(s)) }

// UpdateCompareMarkdown rewrites the comparison's generated part of the file
// at path, keeping the rest (the suite's part included).
func UpdateCompareMarkdown(path string, c *Comparison) error {
	return comparePart.replace(path, CompareMarkdown(c))
}

// replace puts gen between the part's markers in the file at path, keeping
// the rest; a file without them gets them appended (a missing file is
// created).
func (p generatedPart) replace(path, gen string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("error reading %s: %w", path, err)
	}
	text := string(old)
	if text == "" {
		text = "# Benchmarks\n\n"
	}
	gen = p.begin + "\n" + gen + p.end
	i, j := strings.Index(text, p.begin), strings.Index(text, p.end)
	if i >= 0 && j > i {
		text = text[:i] + gen + text[j+len(p.end):]
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
		case ModeScale, ModeIdle, ModeIngest:
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

	if r := s.run("ingest vs ogr2ogr"); r != nil && r.Ingest != nil {
		p("\n### Ingestion beside `ogr2ogr -f PostgreSQL`\n\n")
		p("%s", IngestMarkdown(r.Ingest))
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

// IngestMarkdown renders an ingest run: per file, each round of both sides
// with the CPU seconds of each part, and the medians' ratio.
func IngestMarkdown(in *IngestResult) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("%d polygons per file, the same durable database; wf's ingestion handler in process (validation with PostGIS validity, stats, hashes, versioning, an envelope per record to a discarding reporter) against `ogr2ogr -f PostgreSQL … -lco SPATIAL_INDEX=GIST --config PG_USE_COPY YES` (with `-t_srs EPSG:4326` for the GeoPackage, as wf stores WGS84); %d rounds, alternating which side goes first; CPU seconds: go = the bench process (wf), gdal = child processes, pg = the PostgreSQL server.\n\n", in.Features, in.Rounds)
	p("| file | side | features/s per round | median | cpu-s go / gdal / pg (first round) | peak RSS MiB | ratio wf / ogr2ogr |\n|---|---|---|---:|---|---:|---:|\n")
	rates := func(runs []IngestRun) string {
		parts := make([]string, len(runs))
		for i, r := range runs {
			parts[i] = fmt.Sprintf("%.0f", r.Rate)
		}
		return strings.Join(parts, ", ")
	}
	cpu := func(runs []IngestRun) string {
		if len(runs) == 0 {
			return ""
		}
		return fmt.Sprintf("%.2f / %.2f / %.2f", runs[0].GoCPU, runs[0].GDALCPU, runs[0].PGCPU)
	}
	for _, path := range in.Paths {
		var peak float64
		for _, r := range path.WF {
			peak = max(peak, r.PeakRSSMB)
		}
		p("| %s | wf | %s | %.0f | %s | %.0f | **%.2f** |\n", path.Name, rates(path.WF), path.WFRate, cpu(path.WF), peak, path.Ratio)
		p("| | ogr2ogr | %s | %.0f | %s | | |\n", rates(path.Ogr2ogr), path.OgrRate, cpu(path.Ogr2ogr))
	}
	return b.String()
}
