package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/wfhq/wf/wftype"
)

// ReporterKind names where a task's per-record results go.
type ReporterKind string

// Reporter kinds.
const (
	// ReporterDatabase batches counts into the task's progress.
	ReporterDatabase ReporterKind = "database"
	// ReporterGCSDetailed keeps every record and writes one report object per task.
	ReporterGCSDetailed ReporterKind = "gcs_detailed"
)

// MaxDedupKeyLength is the longest dedup key the store accepts (VARCHAR(512)).
const MaxDedupKeyLength = 512

// Concurrency limits how many tasks of a type run at once; 0 means no limit.
type Concurrency struct {
	PerInstance int
	Global      int
	// PerTenant caps how many run at once per tenant (schema_name), across
	// every instance.
	PerTenant int
}

// RateLimit bounds how many tasks of a type start per interval, across every
// instance; zero Interval means no limit. Windows are fixed, aligned to
// multiples of Interval since the Unix epoch.
type RateLimit struct {
	// Starts is the most starts of the type, all tenants together, per
	// window (0: no type-wide limit).
	Starts int
	// PerTenant is the most starts of each tenant per window (0: none).
	PerTenant int
	Interval  time.Duration
}

// TaskType is a compiled TaskType spec. It is immutable: accessors return
// copies.
type TaskType struct {
	named
	scope             wftype.Scope
	mode              wftype.ExecutionMode
	handler           Handler
	inputsRaw         json.RawMessage
	inputs            *jsonschema.Schema
	inputsDoc         rawSchemas
	outputsRaw        json.RawMessage // nil: the task type declares no outputs
	outputsDoc        any             // the outputs schema as JSON values, nil if none
	maxRetries        int
	maxSnoozes        int
	backoff           Backoff
	visibilityTimeout time.Duration
	timeout           time.Duration
	priority          int
	concurrency       Concurrency
	rateLimit         RateLimit
	dedupKey          *program
	unique            Unique
	onDuplicate       OnDuplicate
	reporters         []ReporterKind
	createRoles       []string
	files             []string
}

// Scope is what the task type's tasks belong to.
func (t *TaskType) Scope() wftype.Scope { return t.scope }

// Mode is the task type's execution mode.
func (t *TaskType) Mode() wftype.ExecutionMode { return t.mode }

// Handler is what runs the task type's tasks.
func (t *TaskType) Handler() Handler { return t.handler.clone() }

// InputSchema is the JSON Schema of the task type's inputs, as JSON.
func (t *TaskType) InputSchema() json.RawMessage { return bytes.Clone(t.inputsRaw) }

// OutputSchema is the JSON Schema of the task type's outputs, as JSON; nil
// when the task type declares none.
func (t *TaskType) OutputSchema() json.RawMessage { return bytes.Clone(t.outputsRaw) }

// MaxRetries is how many retries a failing task gets before DEAD_LETTER.
func (t *TaskType) MaxRetries() int { return t.maxRetries }

// MaxSnoozes is how many times a task may be snoozed (its handler said
// "come back later", wftype.SnoozeError) before a snooze counts as a
// failed attempt.
func (t *TaskType) MaxSnoozes() int { return t.maxSnoozes }

// Backoff is the delay policy between retries.
func (t *TaskType) Backoff() Backoff { return t.backoff }

// VisibilityTimeout is the lease a claim takes, renewed by heartbeats; zero
// when the spec sets none, and then the engine's configured
// visibility_timeout applies (runnerset.RuleFor).
func (t *TaskType) VisibilityTimeout() time.Duration { return t.visibilityTimeout }

// Timeout bounds one run of a task.
func (t *TaskType) Timeout() time.Duration { return t.timeout }

// Priority orders claims: higher runs first.
func (t *TaskType) Priority() int { return t.priority }

// Concurrency is the task type's limits on tasks running at once.
func (t *TaskType) Concurrency() Concurrency { return t.concurrency }

// RateLimit is the task type's rate_limit (zero when none).
func (t *TaskType) RateLimit() RateLimit { return t.rateLimit }

// DedupKeyExpr is the source of the dedup_key expression, "" if none.
func (t *TaskType) DedupKeyExpr() string {
	if t.dedupKey == nil {
		return ""
	}
	return t.dedupKey.source
}

// CreateRoles lists the token roles that may create the type's tasks from
// outside wf (POST /tasks, `wf enqueue`): the spec's api.create, or its
// default by scope. Empty: only wf itself (subscriptions, schedules,
// handlers) creates them.
func (t *TaskType) CreateRoles() []string { return slices.Clone(t.createRoles) }

// CreatableBy reports whether a token of the role may create the type's
// tasks from outside wf.
func (t *TaskType) CreatableBy(role string) bool { return slices.Contains(t.createRoles, role) }

// FileInputs lists the inputs (top-level properties) that name files the
// handler reads or writes (the spec's files): a local one must lie in the
// task's tenant's folder, which the client checks when the task is created.
func (t *TaskType) FileInputs() []string { return slices.Clone(t.files) }

// Reporters lists where per-record results go (possibly none).
func (t *TaskType) Reporters() []ReporterKind { return slices.Clone(t.reporters) }

// ValidateInputs checks v (any value that encodes to JSON) against the task
// type's inputs schema. The error is an InputErrors listing every violation
// with its JSON pointer.
func (t *TaskType) ValidateInputs(v any) error {
	doc, err := toJSONValue(v)
	if err != nil {
		return fmt.Errorf("error validating inputs of task type %s: %w", t.name, err)
	}
	return validateAgainst(t.inputs, t.inputsDoc, doc)
}

// DedupKey evaluates the task type's dedup_key for a task about to be created.
// ok is false when the task type has no dedup key or the expression returned
// "": the task is not deduplicated. It fails when the expression does not
// return a string or the key is longer than MaxDedupKeyLength bytes.
func (t *TaskType) DedupKey(schemaName string, inputs map[string]any) (key string, ok bool, err error) {
	if t.dedupKey == nil {
		return "", false, nil
	}
	out, err := t.dedupKey.run(taskEnv{Inputs: inputs, SchemaName: schemaName, TaskType: t.name})
	if err != nil {
		return "", false, fmt.Errorf("error computing dedup_key of task type %s: %w", t.name, err)
	}
	return checkDedupKey(out.(string), "task type "+t.name)
}

// checkDedupKey applies the rules every dedup key follows.
func checkDedupKey(key, owner string) (string, bool, error) {
	if key == "" {
		return "", false, nil
	}
	if len(key) > MaxDedupKeyLength {
		return "", false, fmt.Errorf("error computing dedup_key of %s: the key is %d bytes long, at most %d are allowed", owner, len(key), MaxDedupKeyLength)
	}
	return key, true, nil
}

// DispatchRule is what the dispatcher needs to know about a task type to
// claim, run and retry its tasks.
type DispatchRule struct {
	TaskType          string
	Mode              wftype.ExecutionMode
	Priority          int
	Concurrency       Concurrency
	RateLimit         RateLimit
	MaxRetries        int
	MaxSnoozes        int
	Backoff           Backoff
	VisibilityTimeout time.Duration
	Timeout           time.Duration
}

// DispatchRule returns the task type's dispatcher rule.
func (t *TaskType) DispatchRule() DispatchRule {
	return DispatchRule{
		TaskType:          t.name,
		Mode:              t.mode,
		Priority:          t.priority,
		Concurrency:       t.concurrency,
		RateLimit:         t.rateLimit,
		MaxRetries:        t.maxRetries,
		MaxSnoozes:        t.maxSnoozes,
		Backoff:           t.backoff,
		VisibilityTimeout: t.visibilityTimeout,
		Timeout:           t.timeout,
	}
}
