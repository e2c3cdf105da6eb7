package spec

import (
	"maps"
	"slices"
)

// RunnerType is a kind of runner.
type RunnerType string

// Runner types. Only CloudRun is configured by a Runner spec; Background and
// Sync are the local runners every instance has.
const (
	// RunnerCloudRun runs tasks as Google Cloud Run jobs (ASYNCHRONOUS only).
	RunnerCloudRun RunnerType = "cloudrun"
	// RunnerBackground runs ASYNCHRONOUS tasks in process, with their handler.
	RunnerBackground RunnerType = "background"
	// RunnerSync runs SYNCHRONOUS tasks in process, with their handler.
	RunnerSync RunnerType = "sync"
)

// LocalRunnerPriority is the priority of the local runners. Lower runs
// first, so a Runner spec must have a lower one to be used at all.
const LocalRunnerPriority = 100

// CloudRunSettings configures a Cloud Run runner.
type CloudRunSettings struct {
	Project string
	Region  string
	// Jobs maps a task type to the Cloud Run job that runs it.
	Jobs map[string]string
}

// Runner is a compiled Runner spec. It is immutable: accessors return copies.
type Runner struct {
	named
	typ      RunnerType
	priority int
	cloudRun CloudRunSettings
}

// Type is the kind of runner.
func (r *Runner) Type() RunnerType { return r.typ }

// Priority orders runners: lower runs first.
func (r *Runner) Priority() int { return r.priority }

// CloudRun returns the settings of a cloudrun runner.
func (r *Runner) CloudRun() CloudRunSettings {
	s := r.cloudRun
	s.Jobs = maps.Clone(s.Jobs)
	return s
}

// TaskTypes lists the task types the runner serves, sorted.
func (r *Runner) TaskTypes() []string {
	return slices.Sorted(maps.Keys(r.cloudRun.Jobs))
}

// job returns the job that runs taskType, if the runner serves it.
func (r *Runner) job(taskType string) (string, bool) {
	j, ok := r.cloudRun.Jobs[taskType]
	return j, ok
}
