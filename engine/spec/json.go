package spec

import (
	"encoding/json"
	"fmt"
)

// The JSON form of a Set, as `wf compile --format json` prints it. Field
// order is fixed and lists are sorted, so the output is stable.
type (
	setJSON struct {
		Files         []string           `json:"files"`
		TaskTypes     []taskTypeJSON     `json:"task_types"`
		Runners       []runnerJSON       `json:"runners"`
		Capabilities  []capabilityJSON   `json:"capabilities"`
		Subscriptions []subscriptionJSON `json:"subscriptions"`
		Schedules     []scheduleJSON     `json:"schedules"`
		Workflows     []workflowJSON     `json:"workflows"`
	}
	// triggered is what a subscription or schedule creates: a task type,
	// or runs of a workflow.
	triggered struct {
		TaskType string `json:"task_type,omitempty"`
		Workflow string `json:"workflow,omitempty"`
	}
	workflowJSON struct {
		Name        string            `json:"name"`
		Description string            `json:"description,omitempty"`
		Source      string            `json:"source"`
		Inputs      json.RawMessage   `json:"inputs"`
		Timeout     string            `json:"timeout"`
		StartRoles  []string          `json:"start_roles"`
		Steps       []stepJSON        `json:"steps"`
		Outputs     map[string]string `json:"outputs,omitempty"`
	}
	stepJSON struct {
		Name              string            `json:"name"`
		TaskType          string            `json:"task_type,omitempty"`
		Workflow          string            `json:"workflow,omitempty"`
		DependsOn         []string          `json:"depends_on"`
		When              string            `json:"when,omitempty"`
		OnUpstreamSkipped string            `json:"on_upstream_skipped"`
		ForEach           string            `json:"for_each,omitempty"`
		Concurrency       int               `json:"concurrency,omitempty"`
		MaxItems          int               `json:"max_items,omitempty"`
		Inputs            map[string]string `json:"inputs"`
		MaxRetries        int               `json:"max_retries"`
		Priority          int               `json:"priority"`
		Kind              string            `json:"kind,omitempty"`
		Wait              *waitJSON         `json:"wait,omitempty"`
	}
	taskTypeJSON struct {
		Name              string          `json:"name"`
		Description       string          `json:"description,omitempty"`
		Source            string          `json:"source"`
		Scope             string          `json:"scope"`
		ExecutionMode     string          `json:"execution_mode"`
		Handler           handlerJSON     `json:"handler"`
		Inputs            json.RawMessage `json:"inputs"`
		Outputs           json.RawMessage `json:"outputs,omitempty"`
		MaxRetries        int             `json:"max_retries"`
		MaxSnoozes        int             `json:"max_snoozes"`
		Backoff           backoffJSON     `json:"backoff"`
		VisibilityTimeout string          `json:"visibility_timeout,omitempty"` // absent: the engine's default
		Timeout           string          `json:"timeout"`
		Priority          int             `json:"priority"`
		Concurrency       concurrencyJSON `json:"concurrency"`
		DedupKey          string          `json:"dedup_key,omitempty"`
		Reporters         []ReporterKind  `json:"reporters"`
		API               apiJSON         `json:"api"`
		Files             []string        `json:"files,omitempty"`
	}
	apiJSON struct {
		Create []string `json:"create"`
	}
	handlerJSON struct {
		Kind    HandlerKind `json:"kind"`
		Builtin string      `json:"builtin,omitempty"`
		Exec    *execJSON   `json:"exec,omitempty"`
		HTTP    *httpJSON   `json:"http,omitempty"`
	}
	execJSON struct {
		Command []string          `json:"command"`
		Env     map[string]string `json:"env,omitempty"`
		Dir     string            `json:"dir,omitempty"`
	}
	httpJSON struct {
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers,omitempty"`
		Timeout string            `json:"timeout"`
	}
	backoffJSON struct {
		Base   string  `json:"base"`
		Factor float64 `json:"factor"`
		Max    string  `json:"max"`
		Jitter float64 `json:"jitter"`
	}
	concurrencyJSON struct {
		PerInstance *int `json:"per_instance"`
		Global      *int `json:"global"`
	}
	runnerJSON struct {
		Name        string            `json:"name"`
		Description string            `json:"description,omitempty"`
		Source      string            `json:"source"`
		Type        RunnerType        `json:"type"`
		Priority    int               `json:"priority"`
		Project     string            `json:"project,omitempty"`
		Region      string            `json:"region,omitempty"`
		Jobs        map[string]string `json:"jobs,omitempty"`
	}
	capabilityJSON struct {
		ExecutionMode string          `json:"execution_mode"`
		TaskType      string          `json:"task_type"`
		Runners       []runnerRefJSON `json:"runners"`
	}
	runnerRefJSON struct {
		Name     string      `json:"name"`
		Type     RunnerType  `json:"type"`
		Priority int         `json:"priority"`
		Job      string      `json:"job,omitempty"`
		Handler  HandlerKind `json:"handler,omitempty"`
	}
	subscriptionJSON struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Source      string `json:"source"`
		EventType   string `json:"event_type"`
		Glob        bool   `json:"glob"`
		When        string `json:"when,omitempty"`
		triggered
		Payload    json.RawMessage   `json:"payload,omitempty"`
		SchemaName string            `json:"schema_name"`
		Inputs     map[string]string `json:"inputs"`
		DedupKey   string            `json:"dedup_key"`
	}
	scheduleJSON struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Source      string `json:"source"`
		Cron        string `json:"cron"`
		Timezone    string `json:"timezone"`
		triggered
		SchemaName string          `json:"schema_name"`
		Inputs     json.RawMessage `json:"inputs"`
		Missed     MissedPolicy    `json:"missed"`
	}
)

// MarshalJSON renders the set as stable JSON: fixed field order, lists
// sorted, durations as Go duration strings (1h, 5m, 1h30m).
func (s *Set) MarshalJSON() ([]byte, error) {
	out := setJSON{
		Files:         s.Files(),
		TaskTypes:     make([]taskTypeJSON, 0, len(s.taskTypes)),
		Runners:       make([]runnerJSON, 0, len(s.runners)),
		Capabilities:  make([]capabilityJSON, 0, len(s.capabilities)),
		Subscriptions: make([]subscriptionJSON, 0, len(s.subscriptions)),
		Schedules:     make([]scheduleJSON, 0, len(s.schedules)),
	}
	for _, t := range s.taskTypes {
		out.TaskTypes = append(out.TaskTypes, t.toJSON())
	}
	for _, r := range s.runners {
		out.Runners = append(out.Runners, runnerJSON{
			Name: r.name, Description: r.description, Source: r.source.String(), Type: r.typ, Priority: r.priority,
			Project: r.cloudRun.Project, Region: r.cloudRun.Region, Jobs: r.cloudRun.Jobs,
		})
	}
	for _, c := range s.capabilities {
		cj := capabilityJSON{ExecutionMode: string(c.Mode), TaskType: c.TaskType}
		for _, r := range c.Runners {
			cj.Runners = append(cj.Runners, runnerRefJSON(r))
		}
		out.Capabilities = append(out.Capabilities, cj)
	}
	for _, sub := range s.subscriptions {
		out.Subscriptions = append(out.Subscriptions, subscriptionJSON{
			Name: sub.name, Description: sub.description, Source: sub.source.String(),
			EventType: sub.eventType, Glob: sub.glob, When: sub.WhenExpr(), triggered: triggerJSON(sub.taskType, sub.workflow),
			Payload: sub.PayloadSchema(), SchemaName: sub.schemaName.source, Inputs: sub.InputExprs(), DedupKey: sub.dedupKey.source,
		})
	}
	for _, sch := range s.schedules {
		out.Schedules = append(out.Schedules, scheduleJSON{
			Name: sch.name, Description: sch.description, Source: sch.source.String(),
			Cron: sch.cronLine, Timezone: sch.location.String(), triggered: triggerJSON(sch.taskType, sch.workflow),
			SchemaName: sch.schemaName, Inputs: compactJSON(sch.inputs), Missed: sch.missed,
		})
	}
	out.Workflows = make([]workflowJSON, 0, len(s.workflows))
	for _, w := range s.workflows {
		out.Workflows = append(out.Workflows, w.toJSON())
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("error encoding spec set: %w", err)
	}
	return b, nil
}

// toJSON renders a task type.
func (t *TaskType) toJSON() taskTypeJSON {
	h := handlerJSON{Kind: t.handler.Kind, Builtin: t.handler.Builtin}
	switch t.handler.Kind {
	case HandlerExec:
		h.Exec = &execJSON{Command: t.handler.Exec.Command, Env: t.handler.Exec.Env, Dir: t.handler.Exec.Dir}
	case HandlerHTTP:
		h.HTTP = &httpJSON{URL: t.handler.HTTP.URL, Headers: t.handler.HTTP.Headers, Timeout: FormatDuration(t.handler.HTTP.Timeout)}
	}
	var conc concurrencyJSON
	if t.concurrency.PerInstance > 0 {
		conc.PerInstance = &t.concurrency.PerInstance
	}
	if t.concurrency.Global > 0 {
		conc.Global = &t.concurrency.Global
	}
	return taskTypeJSON{
		Name: t.name, Description: t.description, Source: t.source.String(),
		Scope: string(t.scope), ExecutionMode: string(t.mode), Handler: h,
		Inputs:     compactJSON(t.inputsRaw),
		Outputs:    t.OutputSchema(),
		MaxRetries: t.maxRetries,
		MaxSnoozes: t.maxSnoozes,
		Backoff: backoffJSON{
			Base: FormatDuration(t.backoff.Base), Factor: t.backoff.Factor,
			Max: FormatDuration(t.backoff.Max), Jitter: t.backoff.Jitter,
		},
		VisibilityTimeout: optionalDuration(t.visibilityTimeout),
		Timeout:           FormatDuration(t.timeout),
		Priority:          t.priority,
		Concurrency:       conc,
		DedupKey:          t.DedupKeyExpr(),
		Reporters:         t.Reporters(),
		API:               apiJSON{Create: t.CreateRoles()},
		Files:             t.FileInputs(),
	}
}

// compactJSON re-encodes a JSON value with sorted keys (it already has them:
// it was encoded from a map), guarding against an empty value.
func compactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// toJSON renders a workflow, its steps in topological order.
func (w *Workflow) toJSON() workflowJSON {
	out := workflowJSON{
		Name: w.name, Description: w.description, Source: w.source.String(),
		Inputs: compactJSON(w.inputsRaw), Timeout: FormatDuration(w.timeout), StartRoles: w.StartRoles(),
		Steps: make([]stepJSON, 0, len(w.steps)), Outputs: w.OutputExprs(),
	}
	for _, s := range w.steps {
		sj := stepJSON{
			Name: s.name, DependsOn: s.DependsOn(), When: s.WhenExpr(),
			OnUpstreamSkipped: s.onSkipped, ForEach: s.ForEachExpr(), Inputs: s.InputExprs(),
			MaxRetries: s.MaxRetries(), Priority: s.Priority(),
		}
		if sj.DependsOn == nil {
			sj.DependsOn = []string{}
		}
		if s.child != nil {
			sj.Workflow = s.child.name
		} else if s.taskType != nil {
			sj.TaskType = s.taskType.name
		}
		if s.wait != nil {
			sj.Kind, sj.Wait = s.wait.kind, s.wait.toJSON()
		}
		if s.forEach != nil {
			sj.Concurrency, sj.MaxItems = s.concurrency, s.maxItems
		}
		out.Steps = append(out.Steps, sj)
	}
	return out
}

// triggerJSON names what a subscription or schedule creates.
func triggerJSON(t *TaskType, w *Workflow) triggered {
	if w != nil {
		return triggered{Workflow: w.name}
	}
	return triggered{TaskType: t.name}
}
