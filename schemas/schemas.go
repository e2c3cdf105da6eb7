// Package schemas embeds wf's JSON Schema files: the spec kinds (TaskType,
// Subscription, Schedule, Runner, Workflow, dispatched by spec.schema.json), and the
// other contracts other packages validate against. The files are the source of
// truth for editors (via the yaml-language-server comment in spec files) and
// for wf alike.
package schemas

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
)

// FS holds every *.json file of this folder. It is read-only.
//
//go:embed *.json
var FS embed.FS

// Spec schema files. SpecSchema dispatches on a document's kind to the others;
// SpecDefsSchema holds their shared definitions.
const (
	SpecSchema         = "spec.schema.json"
	SpecDefsSchema     = "spec_defs.schema.json"
	TaskTypeSchema     = "task_type.schema.json"
	SubscriptionSchema = "subscription.schema.json"
	ScheduleSchema     = "schedule.schema.json"
	RunnerSchema       = "runner.schema.json"
	WorkflowSchema     = "workflow.schema.json"
)

// EnvelopeSchema is the schema of one per-record envelope of a report.
const EnvelopeSchema = "envelope.schema.json"

// BaseID is the base of every schema's $id: its address in the repository,
// so that a schema names itself and its relative $refs resolve to its
// siblings. Compilers register each file under ID(name).
const BaseID = "https://raw.githubusercontent.com/wfhq/wf/main/schemas/"

// ID returns the $id of the named schema file.
func ID(name string) string { return BaseID + name }

// SpecSchemas lists the files that make up the spec schema, SpecSchema first.
// Load them all into one compiler so that their relative $refs resolve.
func SpecSchemas() []string {
	return []string{SpecSchema, SpecDefsSchema, TaskTypeSchema, SubscriptionSchema, ScheduleSchema, RunnerSchema, WorkflowSchema}
}

// Read returns the content of the named schema file.
func Read(name string) ([]byte, error) {
	b, err := FS.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("error reading schema %s: %w", name, err)
	}
	return b, nil
}

// Names returns the names of every embedded schema file, sorted.
func Names() []string {
	entries, err := fs.ReadDir(FS, ".")
	if err != nil {
		// The embedded root always exists; an error here is impossible.
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}
