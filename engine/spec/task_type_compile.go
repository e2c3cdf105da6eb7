package spec

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/wfhq/wf/wftype"
)

// Bounds and defaults of a task type's durations.
const (
	minVisibilityTimeout = 5 * time.Second
	maxVisibilityTimeout = 24 * time.Hour
	defaultTimeout       = time.Hour
	minTimeout           = time.Second
	maxTimeout           = 7 * 24 * time.Hour
	minBackoffBase       = time.Millisecond
	maxBackoffBase       = 24 * time.Hour
	maxBackoffMax        = 7 * 24 * time.Hour
	minHTTPTimeout       = time.Second
	defaultMaxRetries    = 3
	// DefaultMaxSnoozes is max_snoozes when a spec leaves it out.
	DefaultMaxSnoozes = 25
)

// taskTypeSpec is the shape of a TaskType document (pass 1 checked it).
type taskTypeSpec struct {
	Name          string `json:"name"`
	Description   string `json:"description"`
	Scope         string `json:"scope"`
	ExecutionMode string `json:"execution_mode"`
	Handler       struct {
		Builtin *string `json:"builtin"`
		Exec    *struct {
			Command []string          `json:"command"`
			Env     map[string]string `json:"env"`
			Dir     string            `json:"dir"`
		} `json:"exec"`
		HTTP *struct {
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
			Timeout string            `json:"timeout"`
		} `json:"http"`
	} `json:"handler"`
	Inputs     json.RawMessage `json:"inputs"`
	Outputs    json.RawMessage `json:"outputs"`
	MaxRetries *int            `json:"max_retries"`
	MaxSnoozes *int            `json:"max_snoozes"`
	Backoff    struct {
		Base   string   `json:"base"`
		Factor *float64 `json:"factor"`
		Max    string   `json:"max"`
		Jitter *float64 `json:"jitter"`
	} `json:"backoff"`
	VisibilityTimeout string `json:"visibility_timeout"`
	Timeout           string `json:"timeout"`
	Priority          int    `json:"priority"`
	Concurrency       struct {
		PerInstance int `json:"per_instance"`
		Global      int `json:"global"`
		PerTenant   int `json:"per_tenant"`
	} `json:"concurrency"`
	RateLimit *struct {
		Starts    int    `json:"starts"`
		PerTenant int    `json:"per_tenant"`
		Interval  string `json:"interval"`
	} `json:"rate_limit"`
	DedupKey    string      `json:"dedup_key"`
	Unique      *uniqueSpec `json:"unique"`
	OnDuplicate string      `json:"on_duplicate"`
	Reporters   *[]string   `json:"reporters"`
	API         struct {
		Create *[]string `json:"create"`
	} `json:"api"`
	Files []string `json:"files"`
}

// Patterns of the names a handler's config may use.
var (
	envNameRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNameRE  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	placeholderRE = regexp.MustCompile(`\$\{([^}]*)\}`)
)

// Roles that may create tasks over the API (api.create), as the token roles
// are spelled in the configuration.
const (
	RoleClient = "client"
	RoleAdmin  = "admin"
)

// defaultCreateRoles is api.create when a spec leaves it out: a tenant's
// clients may create the tenant's kinds of work (CATALOG, ASSET scope), and
// only admins the platform's (SYSTEM).
func defaultCreateRoles(scope wftype.Scope) []string {
	if scope == wftype.ScopeSystem {
		return []string{RoleAdmin}
	}
	return []string{RoleClient, RoleAdmin}
}

// compileTaskType runs pass 2 over a TaskType document.
func (c *checker) compileTaskType(d *document) *TaskType {
	s := decodeDocument[taskTypeSpec](c, d)
	t := &TaskType{
		named:       d.named(s.Name, s.Description),
		scope:       wftype.Scope(cmp.Or(s.Scope, string(wftype.ScopeSystem))),
		mode:        wftype.ExecutionMode(cmp.Or(s.ExecutionMode, string(wftype.ModeAsync))),
		maxRetries:  defaultMaxRetries,
		maxSnoozes:  DefaultMaxSnoozes,
		priority:    s.Priority,
		concurrency: Concurrency{PerInstance: s.Concurrency.PerInstance, Global: s.Concurrency.Global, PerTenant: s.Concurrency.PerTenant},
		reporters:   []ReporterKind{ReporterDatabase},
	}
	if s.MaxRetries != nil {
		t.maxRetries = *s.MaxRetries
	}
	if s.MaxSnoozes != nil {
		t.maxSnoozes = *s.MaxSnoozes
	}
	// Unset stays zero: the engine's configured visibility_timeout applies.
	var visOK, timeoutOK bool
	t.visibilityTimeout, visOK = c.duration(d, "/visibility_timeout", s.VisibilityTimeout, 0, minVisibilityTimeout, maxVisibilityTimeout)
	if visOK {
		c.checkLease(d, t.visibilityTimeout)
	}
	t.timeout, timeoutOK = c.duration(d, "/timeout", s.Timeout, defaultTimeout, minTimeout, maxTimeout)
	t.backoff = c.backoff(d, &s)
	t.handler = c.handler(d, &s, t.timeout, timeoutOK)
	t.inputsRaw, t.inputs, t.inputsDoc = c.inputSchema(d, s.Name, s.Inputs)
	t.outputsRaw, t.outputsDoc = c.outputSchema(d, s.Name, s.Outputs)
	if s.DedupKey != "" {
		p, err := d.compileExpression("/dedup_key", s.DedupKey, taskEnv{}, resultString)
		c.failAt(d, "/dedup_key", err)
		t.dedupKey = p
		if p != nil {
			n := len(c.errs)
			c.checkInputReads(d, "/dedup_key", s.DedupKey, t.inputsDoc[inputsSchemaURL(s.Name)])
			if len(c.errs) == n {
				c.checkTypedDedupKey(d, s.DedupKey, t.inputsDoc[inputsSchemaURL(s.Name)])
			}
		}
	}
	if per, global := t.concurrency.PerInstance, t.concurrency.Global; per > 0 && global > 0 && per > global {
		c.fail(d, "/concurrency/per_instance", "must not exceed concurrency.global (%d); got %d", global, per)
	}
	if per, global := t.concurrency.PerTenant, t.concurrency.Global; per > 0 && global > 0 && per > global {
		c.fail(d, "/concurrency/per_tenant", "must not exceed concurrency.global (%d); got %d", global, per)
	}
	t.rateLimit = c.rateLimit(d, &s)
	t.unique = c.unique(d, s.Unique)
	if t.onDuplicate = c.onDuplicate(d, s.OnDuplicate, s.DedupKey); t.onDuplicate == DuplicateKeep {
		t.onDuplicate = "" // the default, as if left out
	}
	t.createRoles = defaultCreateRoles(t.scope)
	if s.API.Create != nil {
		t.createRoles = slices.Clone(*s.API.Create)
	}
	t.files = slices.Clone(s.Files)
	c.checkFileInputs(d, s.Files, t.inputsDoc[inputsSchemaURL(s.Name)])
	if s.Reporters != nil {
		t.reporters = make([]ReporterKind, len(*s.Reporters))
		for i, r := range *s.Reporters {
			t.reporters[i] = ReporterKind(r)
		}
	}
	if d.failed {
		return nil
	}
	return t
}

// backoff checks and fills in a task type's backoff policy.
func (c *checker) backoff(d *document, s *taskTypeSpec) Backoff {
	b := defaultBackoff()
	var baseOK, maxOK bool
	b.Base, baseOK = c.duration(d, "/backoff/base", s.Backoff.Base, b.Base, minBackoffBase, maxBackoffBase)
	b.Max, maxOK = c.duration(d, "/backoff/max", s.Backoff.Max, b.Max, minBackoffBase, maxBackoffMax)
	if s.Backoff.Factor != nil {
		b.Factor = *s.Backoff.Factor
	}
	if s.Backoff.Jitter != nil {
		b.Jitter = *s.Backoff.Jitter
	}
	if baseOK && maxOK && b.Max < b.Base {
		if s.Backoff.Max == "" {
			c.fail(d, "/backoff/base", "must not be above backoff.max (%s); got %s", FormatDuration(b.Max), s.Backoff.Base)
		} else {
			c.fail(d, "/backoff/max", "must not be below backoff.base (%s); got %s", FormatDuration(b.Base), s.Backoff.Max)
		}
	}
	return b
}

// handler checks a task type's handler.
func (c *checker) handler(d *document, s *taskTypeSpec, timeout time.Duration, timeoutOK bool) Handler {
	h := s.Handler
	switch {
	case h.Builtin != nil:
		name := *h.Builtin
		if !slices.Contains(c.builtins, name) {
			hint := ""
			if sug, ok := suggest(name, c.builtins); ok {
				hint = fmt.Sprintf("; did you mean %q?", sug)
			} else if len(c.builtins) > 0 {
				hint = "; known builtins: " + strings.Join(c.builtins, ", ")
			}
			c.fail(d, "/handler/builtin", "unknown builtin handler %q%s", name, hint)
		}
		return Handler{Kind: HandlerBuiltin, Builtin: name}
	case h.Exec != nil:
		for _, k := range sortedKeys(h.Exec.Env) {
			ptr := joinPointer("/handler/exec/env", k)
			if !envNameRE.MatchString(k) {
				c.failKey(d, ptr, "not a valid environment variable name")
			}
			c.placeholders(d, ptr, h.Exec.Env[k])
		}
		return Handler{Kind: HandlerExec, Exec: ExecHandler{Command: h.Exec.Command, Env: h.Exec.Env, Dir: h.Exec.Dir}}
	case h.HTTP != nil:
		c.placeholders(d, "/handler/http/url", h.HTTP.URL)
		if !plausibleURL(h.HTTP.URL) {
			c.fail(d, "/handler/http/url", "expected an absolute http or https URL (${NAME} placeholders allowed); got %s", strconv.Quote(h.HTTP.URL))
		}
		for _, k := range sortedKeys(h.HTTP.Headers) {
			ptr := joinPointer("/handler/http/headers", k)
			if !headerNameRE.MatchString(k) {
				c.failKey(d, ptr, "not a valid HTTP header name")
			}
			if strings.ContainsAny(h.HTTP.Headers[k], "\r\n") {
				c.fail(d, ptr, "a header value must be one line")
			}
			c.placeholders(d, ptr, h.HTTP.Headers[k])
		}
		reqTimeout, ok := c.duration(d, "/handler/http/timeout", h.HTTP.Timeout, timeout, minHTTPTimeout, maxTimeout)
		if ok && timeoutOK && reqTimeout > timeout {
			c.fail(d, "/handler/http/timeout", "must not exceed the task's timeout (%s); got %s", FormatDuration(timeout), h.HTTP.Timeout)
		}
		return Handler{Kind: HandlerHTTP, HTTP: HTTPHandler{URL: h.HTTP.URL, Headers: h.HTTP.Headers, Timeout: reqTimeout}}
	}
	return Handler{}
}

// plausibleURL reports whether an HTTP handler's URL, once its ${NAME}
// placeholders are replaced from the environment, can be an absolute http
// or https URL. A placeholder may stand for the scheme, the host, the port,
// a path or the whole URL (12-factor deployments write all of these), so
// each is replaced by a value that fits where it stands.
func plausibleURL(raw string) bool {
	if loc := placeholderRE.FindStringIndex(raw); loc != nil && loc[0] == 0 {
		rest := raw[loc[1]:]
		if !strings.HasPrefix(rest, "://") {
			// The whole URL, or its start (${BASE_URL}/hook): only what
			// follows can be checked.
			return rest == "" || strings.ContainsRune("/?#:", rune(rest[0]))
		}
		raw = "https" + rest // the scheme
	}
	u, err := url.Parse(placeholderRE.ReplaceAllString(raw, "1"))
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// checkLease reports a lease wf run would refuse: less than twice the
// heartbeat interval, so that one late heartbeat loses it. visibility is
// the task type's own, zero when it sets none (the configured one applies).
func (c *checker) checkLease(d *document, visibility time.Duration) {
	rt := c.runtime
	if rt == nil || rt.HeartbeatInterval <= 0 {
		return
	}
	least := 2 * rt.HeartbeatInterval
	switch {
	case visibility > 0 && visibility < least:
		c.fail(d, "/visibility_timeout", "must be at least twice heartbeat_interval (%s), %s, or one late heartbeat loses the lease and wf run refuses to start; raise it to %s or lower heartbeat_interval; got %s",
			FormatDuration(rt.HeartbeatInterval), FormatDuration(least), FormatDuration(least), FormatDuration(visibility))
	case visibility == 0 && rt.VisibilityTimeout > 0 && rt.VisibilityTimeout < least:
		c.failKey(d, "/name", "sets no visibility_timeout, so it takes the configured one (%s), less than twice heartbeat_interval (%s) and refused by wf run; set visibility_timeout: %s here, or change the configuration",
			FormatDuration(rt.VisibilityTimeout), FormatDuration(rt.HeartbeatInterval), FormatDuration(least))
	}
}

// placeholders checks the ${NAME} references of a value.
func (c *checker) placeholders(d *document, ptr, value string) {
	for _, m := range placeholderRE.FindAllStringSubmatch(value, -1) {
		if !envNameRE.MatchString(m[1]) {
			c.fail(d, ptr, "${%s} does not name an environment variable", m[1])
		}
	}
	if rest := placeholderRE.ReplaceAllString(value, ""); strings.Contains(rest, "${") {
		c.fail(d, ptr, "unclosed ${ in %s", strconv.Quote(value))
	}
}

// inputSchema compiles a task type's inputs schema (default {"type": "object"}).
func (c *checker) inputSchema(d *document, name string, raw json.RawMessage) (json.RawMessage, *jsonschema.Schema, rawSchemas) {
	if len(raw) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	if string(raw) == "false" {
		c.fail(d, "/inputs", "false rejects every input; use {type: object} for any inputs")
		return nil, nil, nil
	}
	schema, doc, violations := compileInputSchema(name, raw)
	for _, v := range violations {
		if ref, ptr, ok := d.badRef(v); ok {
			c.fail(d, ptr, "$ref %q points at nothing this schema can reach; a $ref names a place inside the inputs schema, such as \"#/$defs/NAME\" with NAME under $defs (%s)", ref, strings.TrimPrefix(v.message, "not a valid JSON Schema: "))
			continue
		}
		c.add(d, v.pointer("/inputs"), d.violationError(v, "/inputs"))
	}
	if schema == nil {
		return nil, nil, nil
	}
	c.checkInputSchema(d, doc[inputsSchemaURL(name)])
	if m, ok := doc[inputsSchemaURL(name)].(map[string]any); ok {
		if typ, has := m["type"]; has && !acceptsObject(typ) {
			c.fail(d, "/inputs/type", "task inputs are a JSON object, so the schema must accept an object; got %s", jsonText(typ))
		}
	}
	return raw, schema, doc
}

// outputSchema checks a task type's outputs schema, when it declares one,
// and returns it as JSON and as JSON values.
func (c *checker) outputSchema(d *document, name string, raw json.RawMessage) (json.RawMessage, any) {
	if len(raw) == 0 {
		return nil, nil
	}
	_, doc, violations := compileInputSchema(name+"/outputs", raw)
	for _, v := range violations {
		c.add(d, v.pointer("/outputs"), d.violationError(v, "/outputs"))
	}
	if len(violations) > 0 {
		return nil, nil
	}
	return raw, doc[inputsSchemaURL(name+"/outputs")]
}

// acceptsObject reports whether a schema's type keyword allows an object.
func acceptsObject(typ any) bool {
	switch t := typ.(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return false
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Bounds of a rate_limit's interval: a window shorter than a second would be
// below the claims' own cadence; one longer than a day is a quota, not a rate.
const (
	minRateInterval = time.Second
	maxRateInterval = 24 * time.Hour
)

// rateLimit checks and compiles rate_limit (zero when absent).
func (c *checker) rateLimit(d *document, s *taskTypeSpec) RateLimit {
	r := s.RateLimit
	if r == nil {
		return RateLimit{}
	}
	if r.Starts == 0 && r.PerTenant == 0 {
		c.fail(d, "/rate_limit", "needs starts, per_tenant or both")
		return RateLimit{}
	}
	if r.Starts > 0 && r.PerTenant > r.Starts {
		c.fail(d, "/rate_limit/per_tenant", "must not exceed rate_limit.starts (%d); got %d", r.Starts, r.PerTenant)
	}
	iv, ok := c.wholeDuration(d, "/rate_limit/interval", r.Interval, minRateInterval, maxRateInterval, time.Second, "seconds")
	if !ok {
		return RateLimit{}
	}
	return RateLimit{Starts: r.Starts, PerTenant: r.PerTenant, Interval: iv}
}
