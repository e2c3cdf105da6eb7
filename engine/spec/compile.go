package spec

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Spec kinds.
const (
	KindTaskType     = "TaskType"
	KindSubscription = "Subscription"
	KindSchedule     = "Schedule"
	KindRunner       = "Runner"
)

// Options configure Compile.
type Options struct {
	// Builtins lists the names of the Go handlers compiled into wf (the
	// registry of runners/builtin). A builtin handler must name one of them;
	// with none given, no builtin handler is valid.
	Builtins []string
	// Runtime is the configuration the specs will run with. With it, the
	// checks that depend on it are made (a lease too short for the
	// heartbeat, which wf run refuses); nil skips them (RuntimeChecks lists them).
	Runtime *Runtime
}

// Runtime is the part of wf's configuration that decides whether a spec can
// run: wf run refuses a task type whose lease (its visibility_timeout, else
// the configured one) is less than twice the heartbeat interval.
type Runtime struct {
	// HeartbeatInterval is how often running tasks' leases are extended.
	HeartbeatInterval time.Duration
	// VisibilityTimeout is the lease of task types that set none.
	VisibilityTimeout time.Duration
}

// RuntimeChecks lists, for a user, the checks that depend on Options.Runtime:
// Compile skips them when it is nil, and they are only as right as the
// configuration given.
func RuntimeChecks() []string {
	return []string{
		"every task type's lease (its visibility_timeout, else the configured visibility_timeout) is at least twice heartbeat_interval",
	}
}

// Load reads the spec files at paths (see ReadSources) and compiles them. It
// returns Errors when the specs are invalid, and another error when they
// cannot be read.
func Load(opts Options, paths ...string) (*Set, error) {
	sources, err := ReadSources(paths...)
	if err != nil {
		return nil, err
	}
	return Compile(sources, opts)
}

// Compile validates the sources in two passes (JSON Schema, then semantic
// checks) and compiles them into a Set. When anything is wrong it returns
// every problem found, as Errors sorted by file, line and column. It never
// panics, whatever the input. To compile many sets, make a Compiler once.
func Compile(sources []Source, opts Options) (*Set, error) {
	c, err := NewCompiler(opts)
	if err != nil {
		return nil, err
	}
	return c.Compile(sources)
}

// Compiler compiles spec sources with fixed Options. It holds the compiled
// spec schemas, so that compiling many sets (tests, fuzzing, a watch loop)
// pays for them once. It is immutable and safe for concurrent use.
type Compiler struct {
	schema   *specSchema
	builtins []string
	runtime  *Runtime
}

// NewCompiler compiles the spec schemas of package schemas.
func NewCompiler(opts Options) (*Compiler, error) {
	schema, err := newSpecSchema()
	if err != nil {
		return nil, err
	}
	var rt *Runtime
	if opts.Runtime != nil {
		copied := *opts.Runtime
		rt = &copied
	}
	return &Compiler{schema: schema, builtins: slices.Sorted(slices.Values(opts.Builtins)), runtime: rt}, nil
}

// Compile is the package's Compile with the compiler's options.
func (cc *Compiler) Compile(sources []Source) (*Set, error) {
	c := &checker{
		builtins:     cc.builtins,
		runtime:      cc.runtime,
		declarations: map[string]map[string]*document{},
		taskTypes:    map[string]*TaskType{},
	}
	var valid []*document // documents of a known kind, each name declared once
	files := make([]string, 0, len(sources))
	for _, src := range sources {
		files = append(files, src.Name)
		docs, errs := parseSource(src)
		c.errs = append(c.errs, errs...)
		for _, d := range docs {
			c.errs = append(c.errs, cc.schema.check(d)...)
			if c.declare(d) {
				valid = append(valid, d)
			}
		}
	}
	set := c.compile(valid)
	if len(c.errs) > 0 {
		return nil, c.errs.sorted()
	}
	slices.Sort(files)
	set.files = slices.Compact(files)
	return set, nil
}

// checker holds the state of one Compile call.
type checker struct {
	builtins     []string
	runtime      *Runtime
	errs         Errors
	declarations map[string]map[string]*document // kind → name → declaring document
	taskTypes    map[string]*TaskType            // the task types that compiled
	// subscriptions name the event types of the Subscription documents
	// (what a workflow's wait_for_event step may wait for).
	subscriptions []*Subscription
	workflows     map[string]*Workflow // the workflows that compiled
}

// add records a pass 2 error about the value at ptr of d, unless pass 1
// already reported something there.
func (c *checker) add(d *document, ptr string, e Error) {
	d.failed = true
	if !d.suppressed(ptr) {
		c.errs = append(c.errs, e)
	}
}

// fail records an error at ptr of d.
func (c *checker) fail(d *document, ptr, format string, args ...any) {
	c.add(d, ptr, d.errorAt(d.at(ptr), "%s%s", prefixPath(fieldPath(d.value, ptr)), fmt.Sprintf(format, args...)))
}

// failKey records an error at the key of the map entry at ptr of d.
func (c *checker) failKey(d *document, ptr, format string, args ...any) {
	c.add(d, ptr, d.errorAt(d.keyAt(ptr), "%s%s", prefixPath(fieldPath(d.value, ptr)), fmt.Sprintf(format, args...)))
}

// failAt records an error of d positioned by the caller.
func (c *checker) failAt(d *document, ptr string, e *Error) {
	if e != nil {
		c.add(d, ptr, *e)
	}
}

// declare registers the kind and name of d. It reports false, with an
// error, when the name is already taken for the kind; documents with no
// usable kind or name register nothing (pass 1 reported them).
func (c *checker) declare(d *document) bool {
	switch d.kind {
	case KindTaskType, KindSubscription, KindSchedule, KindRunner, KindWorkflow:
	default:
		return true
	}
	if d.name == "" {
		return true
	}
	names := c.declarations[d.kind]
	if names == nil {
		names = map[string]*document{}
		c.declarations[d.kind] = names
	}
	if first, dup := names[d.name]; dup {
		at := first.at("/name")
		c.fail(d, "/name", "%s %q is declared twice: here and at %s:%d:%d", d.kind, d.name, first.file, at.Line, at.Col)
		return false
	}
	names[d.name] = d
	return true
}

// decode reads a JSON value into one of the *Spec structs. When pass 1
// passed, the shape is right; when it did not, decode fills in what it can
// (pass 2 still checks the fields that are right) and an error is recorded.
func (c *checker) decode(d *document, ptr string, value, out any) {
	b, err := json.Marshal(value)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil && len(d.flagged) == 0 {
		c.fail(d, ptr, "error decoding: %v", err)
	}
}

// decodeDocument reads a whole document into its kind's *Spec struct, as
// decode does: the first step of each kind's pass 2.
func decodeDocument[T any](c *checker, d *document) T {
	var s T
	c.decode(d, "", d.value, &s)
	return s
}

// compileEach compiles each of ds in order and hands each that compiled
// (not nil) to add before it compiles the next.
func compileEach[T any](ds []*document, compile func(*document) *T, add func(*T)) {
	for _, d := range ds {
		if v := compile(d); v != nil {
			add(v)
		}
	}
}

// compile runs pass 2 over the documents that passed pass 1 and builds the set.
func (c *checker) compile(docs []*document) *Set {
	byKind := map[string][]*document{}
	for _, d := range docs {
		byKind[d.kind] = append(byKind[d.kind], d)
	}
	set := &Set{taskTypeIndex: map[string]*TaskType{}}
	compileEach(byKind[KindTaskType], c.compileTaskType, func(t *TaskType) {
		c.taskTypes[t.name] = t
		set.taskTypes = append(set.taskTypes, t)
		set.taskTypeIndex[t.name] = t
	})
	compileEach(byKind[KindRunner], c.compileRunner, func(r *Runner) { set.runners = append(set.runners, r) })
	c.checkRunnerTies(set.runners)
	// Workflows before the subscriptions and schedules that may start them,
	// each after the workflows its steps start.
	c.workflows = map[string]*Workflow{}
	c.subscriptions = subscribedEvents(byKind[KindSubscription]) // what a wait_for_event may wait for
	compileEach(c.orderWorkflows(byKind[KindWorkflow]), c.compileWorkflow, func(w *Workflow) {
		set.workflows = append(set.workflows, w)
		c.workflows[w.name] = w
	})
	compileEach(byKind[KindSubscription], c.compileSubscription, func(s *Subscription) {
		set.subscriptions = append(set.subscriptions, s)
	})
	c.checkSubscriptionOverlaps(set.subscriptions)
	compileEach(byKind[KindSchedule], c.compileSchedule, func(s *Schedule) { set.schedules = append(set.schedules, s) })
	slices.SortFunc(set.workflows, func(a, b *Workflow) int { return cmp.Compare(a.name, b.name) })
	slices.SortFunc(set.taskTypes, func(a, b *TaskType) int { return cmp.Compare(a.name, b.name) })
	slices.SortFunc(set.subscriptions, func(a, b *Subscription) int { return cmp.Compare(a.name, b.name) })
	slices.SortFunc(set.schedules, func(a, b *Schedule) int { return cmp.Compare(a.name, b.name) })
	slices.SortFunc(set.runners, func(a, b *Runner) int {
		return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(a.name, b.name))
	})
	set.capabilities = buildCapabilities(set.taskTypes, set.runners)
	return set
}

// lookupTaskType resolves a reference to a task type at ptr of d. found is
// false, with an error, when no task type has that name; it is true with a
// nil task type when the task type exists but is itself invalid (its own
// errors say why, and checks against it are skipped).
func (c *checker) lookupTaskType(d *document, ptr, name string, atKey bool) (t *TaskType, found bool) {
	if t, ok := c.taskTypes[name]; ok {
		return t, true
	}
	if _, ok := c.declarations[KindTaskType][name]; ok {
		return nil, true
	}
	declared := make([]string, 0, len(c.declarations[KindTaskType]))
	for n := range c.declarations[KindTaskType] {
		declared = append(declared, n)
	}
	hint := ""
	if s, ok := suggest(name, declared); ok {
		hint = fmt.Sprintf("; did you mean %q?", s)
	}
	if atKey {
		c.failKey(d, ptr, "unknown task type %q%s", name, hint)
	} else {
		c.fail(d, ptr, "unknown task type %q%s", name, hint)
	}
	return nil, false
}

// duration parses the duration at ptr of d and checks its bounds. It
// returns def when the field is absent or wrong (after recording why); ok is
// false when it is wrong, so that no other check compares against a default
// the author did not write.
func (c *checker) duration(d *document, ptr, text string, def, lo, hi time.Duration) (v time.Duration, ok bool) {
	if text == "" {
		return def, true
	}
	v, err := time.ParseDuration(text)
	if err != nil || v < lo || v > hi { // pass 1 checked the syntax: an error is an overflow
		c.fail(d, ptr, "must be between %s and %s; got %s", FormatDuration(lo), FormatDuration(hi), text)
		return def, false
	}
	return v, true
}

// wholeDuration is duration for a setting with no default that must be a
// whole number of unit (units names it in the message): ok is false when
// the setting is absent (0) or wrong (reported).
func (c *checker) wholeDuration(d *document, ptr, text string, lo, hi, unit time.Duration, units string) (v time.Duration, ok bool) {
	v, ok = c.duration(d, ptr, text, 0, lo, hi)
	if !ok || v == 0 {
		return 0, false
	}
	if v%unit != 0 {
		c.fail(d, ptr, "must be a whole number of %s; got %s", units, text)
		return 0, false
	}
	return v, true
}

// optionalDuration is FormatDuration, or "" for zero (not set).
func optionalDuration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return FormatDuration(d)
}

// FormatDuration prints a duration without zero trailing units: 1h, 5m, 1h30m.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// subscribedEvents returns, for each Subscription document, a Subscription
// holding only its event type: the workflows, which compile before the
// subscriptions that may start them, check a wait_for_event's type
// against these. Pass 1 checked the documents' shape.
func subscribedEvents(docs []*document) []*Subscription {
	subs := make([]*Subscription, 0, len(docs))
	for _, d := range docs {
		m, _ := d.value.(map[string]any)
		if et, ok := m["event_type"].(string); ok && et != "" {
			subs = append(subs, &Subscription{eventType: et, glob: isGlob(et)})
		}
	}
	return subs
}
