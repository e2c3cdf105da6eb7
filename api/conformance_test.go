package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/stretchr/testify/require"
)

// The conformance test (issue 35): requests generated from
// schemas/openapi.json, over every operation, each judged by the document
// itself (openapi3filter validates the request). A request the document
// calls valid is refused (400) only at the members or parameters of the
// business rules the operation lists in its x-wf-rules, with each rule's
// problem type; a request it calls invalid
// answers 4xx (a 400 naming its pointer or parameter) and changes nothing
// (the same database and files fingerprint before and after). Answers are
// checked against the document as every test's are (bundle.do).
//
// WF_CONFORMANCE_SEED picks the seed (default 35, so a run is
// reproducible) and WF_CONFORMANCE_REQUESTS how many (default 300);
// `make conformance` runs a longer one with a new seed.

// confRequest is one generated request.
type confRequest struct {
	method, template string
	pathParams       map[string]string
	params           [][2]string
	body             map[string]any // nil: the operation takes no body
	token            string
	mutation         string
}

// target returns the request's path and query.
func (q *confRequest) target() string {
	path := q.template
	for k, v := range q.pathParams {
		path = strings.ReplaceAll(path, "{"+k+"}", url.PathEscape(v))
	}
	var parts []string
	for _, p := range q.params {
		parts = append(parts, url.QueryEscape(p[0])+"="+url.QueryEscape(p[1]))
	}
	if len(parts) > 0 {
		path += "?" + strings.Join(parts, "&")
	}
	return path
}

// rawBody returns the JSON body (nil for none).
func (q *confRequest) rawBody() []byte {
	if q.body == nil {
		return nil
	}
	b, _ := json.Marshal(q.body)
	return b
}

// operation is one operation of the document.
type operation struct {
	method, path string
	op           *openapi3.Operation
	params       openapi3.Parameters
}

// documentRule is one entry of an operation's x-wf-rules: a business rule
// the schemas cannot say, at a body pointer ("/task_type") or a parameter,
// and the problem type of its refusal.
type documentRule struct {
	At      string `json:"at"`
	Rule    string `json:"rule"`
	Problem string `json:"problem"`
}

// rules returns the operation's x-wf-rules.
func (o operation) rules(t *testing.T) []documentRule {
	raw, ok := o.op.Extensions["x-wf-rules"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	require.NoError(t, err)
	var out []documentRule
	require.NoError(t, json.Unmarshal(b, &out), "x-wf-rules of %s %s", o.method, o.path)
	return out
}

// covered says whether a refusal of problem type typ at location is one of
// the rules.
func covered(rules []documentRule, typ, location string) bool {
	for _, r := range rules {
		if (r.At == location || strings.HasPrefix(location, r.At+"/")) && r.Problem == typ {
			return true
		}
	}
	return false
}

// envInt reads an integer environment variable, def when unset.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	return n
}

func TestConformance(t *testing.T) {
	t.Parallel()
	seed := envInt(t, "WF_CONFORMANCE_SEED", 35)
	n := envInt(t, "WF_CONFORMANCE_REQUESTS", 300)
	t.Logf("seed %d, %d requests (WF_CONFORMANCE_SEED, WF_CONFORMANCE_REQUESTS)", seed, n)

	b := setup(t)
	b.createCatalog("cat-a", "roads")
	b.createCatalog("cat-b", "rivers")
	b.createCatalog("cat-v", "v")
	task := b.enqueueTenantJob("s_cat_a")
	dead := b.enqueueTenantJob("s_cat_a")
	b.deadLetter(dead)
	for _, a := range []string{"DEM", "V1"} {
		res := b.do("POST", "/catalogs/cat-a/assets", tokAdmin, map[string]any{"asset_id": a, "uri": "gs://bucket/" + a, "kind": "raster"})
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
	}

	g := &schemaGen{r: rand.New(rand.NewPCG(uint64(seed), 35)), pools: map[string][]string{
		"catalog_id": {"cat-a", "cat-b"}, "collection_id": {"roads", "rivers"}, "task_id": {task, dead},
		"asset_id": {"DEM", "A2"}, "schema_name": {"s_cat_a", "system"}, "task_type": {"noop", "tenant_job", "echo_sync"},
		"event_type": {"survey.updated"}, "owner_id": {"api-test"}, "name": {"publish_collection", "noop"},
		"window": {"1h", "5m"}, "source": {"a.geojson"}, "id_attribute": {"code"}, "uri": {"gs://bucket/x"},
		"uuid": {task}, "workflow": {"publish_collection"},
	}}
	// DELETE operations get their own victims, so the fixtures stay.
	victims := map[string][]string{"catalog_id": {"cat-v"}, "collection_id": {"v"}, "asset_id": {"V1"}}

	var ops []operation
	for _, path := range b.doc.Paths.InMatchingOrder() {
		item := b.doc.Paths.Value(path)
		for method, op := range item.Operations() {
			params := slices.Clone(op.Parameters)
			params = append(params, item.Parameters...)
			ops = append(ops, operation{method: method, path: path, op: op, params: params})
		}
	}
	slices.SortFunc(ops, func(a, b operation) int { return strings.Compare(a.method+" "+a.path, b.method+" "+b.path) })
	require.NotEmpty(t, ops)

	tally := map[string]int{}
	for i := range n {
		o := ops[i%len(ops)]
		q := generate(g, o, victims)
		if g.r.IntN(2) == 0 {
			ms := slices.Clone(mutations)
			g.r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
			for _, m := range ms {
				if q.mutation = m(g, q); q.mutation != "" {
					break
				}
			}
		}
		name := fmt.Sprintf("%03d %s %s", i, o.method, o.path)
		t.Run(name, func(t *testing.T) {
			valid, status := checkConformance(t, b.in(t), o, q)
			tally[fmt.Sprintf("valid=%t %dxx", valid, status/100)]++
		})
	}
	t.Logf("requests by the document's verdict and answer class: %v", tally)
}

// generate makes a request of o from its schemas.
func generate(g *schemaGen, o operation, victims map[string][]string) *confRequest {
	q := &confRequest{method: o.method, template: o.path, pathParams: map[string]string{}, token: tokAdmin}
	if strings.HasSuffix(o.path, "/progress") || strings.HasSuffix(o.path, "/complete") || strings.HasSuffix(o.path, "/fail") {
		q.token = tokWorker
	}
	for _, pr := range o.params {
		p := pr.Value
		var s *openapi3.Schema
		if p.Schema != nil {
			s = p.Schema.Value
		}
		if p.In == "path" {
			if pool := victims[p.Name]; o.method == http.MethodDelete && len(pool) > 0 {
				q.pathParams[p.Name] = pool[0]
				continue
			}
			q.pathParams[p.Name] = fmt.Sprint(g.value(s, p.Name, 0))
			continue
		}
		if p.In != "query" || (!p.Required && g.r.IntN(3) > 0) {
			continue
		}
		v := g.value(s, p.Name, 0)
		if arr, ok := v.([]any); ok {
			for _, e := range arr {
				q.params = append(q.params, [2]string{p.Name, fmt.Sprint(e)})
			}
			continue
		}
		q.params = append(q.params, [2]string{p.Name, fmt.Sprint(v)})
	}
	if rb := o.op.RequestBody; rb != nil {
		if mt := rb.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
			q.body = g.object(mt.Schema.Value, 0)
		}
	}
	return q
}

// judge says whether the document takes the request (nil) or why not.
func judge(b *bundle, q *confRequest) error {
	req, err := http.NewRequestWithContext(b.ctx, q.method, b.http.URL+q.target(), bytes.NewReader(q.rawBody()))
	if err != nil {
		return err
	}
	if q.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, p := range q.params {
		if p[1] == "" {
			return fmt.Errorf("query parameter %s is empty", p[0])
		}
	}
	route, pathParams, err := b.router.FindRoute(req)
	if err != nil {
		return err
	}
	return openapi3filter.ValidateRequest(b.ctx, &openapi3filter.RequestValidationInput{
		Request: req, PathParams: pathParams, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
}

// checkConformance sends q and checks its answer against the document's
// verdict on it; it returns the verdict and the answer's status.
func checkConformance(t *testing.T, b *bundle, o operation, q *confRequest) (valid bool, status int) {
	verdict := judge(b, q)
	var body any
	if raw := q.rawBody(); raw != nil {
		body = raw
	}
	desc := fmt.Sprintf("%s %s %s (mutation: %q)", q.method, q.target(), q.rawBody(), q.mutation)
	var before string
	if verdict != nil {
		before = b.fingerprint(b.root)
	}
	res := b.do(q.method, q.target(), q.token, body)
	valid, status = verdict == nil, res.status
	require.Less(t, res.status, 500, "%s: %s", desc, res.body)
	var p struct {
		Type   string `json:"type"`
		Errors []struct {
			Pointer   *string `json:"pointer"`
			Parameter string  `json:"parameter"`
		} `json:"errors"`
	}
	if res.status >= 400 {
		require.NoError(t, json.Unmarshal(res.body, &p))
	}
	if verdict == nil {
		if res.status != http.StatusBadRequest {
			return valid, status
		}
		rules := o.rules(t)
		require.NotEmpty(t, p.Errors, "%s: %s", desc, res.body)
		for _, e := range p.Errors {
			at := e.Parameter
			if e.Pointer != nil {
				at = *e.Pointer
			}
			require.True(t, covered(rules, p.Type, at), "the document calls %s valid, but wf refused it at %q by no rule (with that problem type) of the operation's x-wf-rules: %s", desc, at, res.body)
		}
		return valid, status
	}
	require.GreaterOrEqual(t, res.status, 400, "the document calls %s invalid (%v), but wf took it: %s", desc, verdict, res.body)
	if res.status == http.StatusBadRequest {
		require.NotEmpty(t, p.Errors, "%s: a 400 names its pointer or parameter: %s", desc, res.body)
		for _, e := range p.Errors {
			require.True(t, e.Pointer != nil || e.Parameter != "", "%s: %s", desc, res.body)
		}
	}
	require.Equal(t, before, b.fingerprint(b.root), "%s, invalid by the document, changed the database or the files", desc)
	return valid, status
}
