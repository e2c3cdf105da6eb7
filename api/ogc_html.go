package api

import (
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// The OGC API routes answer HTML to a person: f=html, or a browser's
// Accept (text/html before any JSON type). The page shows the same
// resource as the JSON (its links, collections, features or conformance
// classes, and the JSON itself) in the dashboard's style; links to the
// server's own resources stay in HTML. Nothing in it runs script.

// wantsHTML reports whether a request asks for the HTML page.
func wantsHTML(r *http.Request) bool {
	switch strings.ToLower(r.URL.Query().Get("f")) {
	case "html":
		return true
	case "":
		accept := r.Header.Get("Accept")
		html := strings.Index(accept, "text/html")
		if html < 0 {
			return false
		}
		json := strings.Index(accept, "json")
		return json < 0 || html < json
	}
	return false
}

// htmlPage is what the template shows.
type htmlPage struct {
	Title       string
	Links       []link
	Collections []map[string]any
	Columns     []string
	Features    []htmlFeature
	Conformance []string
	Properties  [][2]string
	JSON        string
}

// htmlFeature is one row of a features table.
type htmlFeature struct {
	ID       string
	Href     string
	Geometry string
	Values   []string
}

// ogcTemplate is the page of every OGC API resource.
var ogcTemplate = template.Must(template.New("ogc").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · wf</title><link rel="stylesheet" href="/ui/app.css"></head>
<body><header><span class="brand">wf</span><nav><a href="/ui/">Dashboard</a></nav></header>
<main><h1>{{.Title}}</h1>
{{if .Links}}<h2>Links</h2><table data-testid="links"><tr><th>rel</th><th>link</th></tr>
{{range .Links}}<tr><td>{{.Rel}}</td><td><a href="{{.Href}}" rel="{{.Rel}}">{{if .Title}}{{.Title}}{{else}}{{.Href}}{{end}}</a></td></tr>
{{end}}</table>{{end}}
{{if .Collections}}<h2>Collections</h2><table data-testid="collections"><tr><th>id</th><th>title</th><th class="num">features</th><th>extent</th></tr>
{{range .Collections}}<tr><td><a href="{{index . "href"}}">{{index . "id"}}</a></td><td>{{index . "title"}}</td><td class="num">{{index . "itemCount"}}</td><td>{{index . "bbox"}}</td></tr>
{{end}}</table>{{end}}
{{if .Conformance}}<h2>Conformance classes</h2><ul data-testid="conformance">{{range .Conformance}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Properties}}<h2>Properties</h2><table data-testid="properties">{{range .Properties}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>{{end}}
{{if .Columns}}<h2>Features</h2><table data-testid="features"><tr><th>id</th><th>geometry</th>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Features}}<tr data-id="{{.ID}}"><td><a href="{{.Href}}">{{.ID}}</a></td><td>{{.Geometry}}</td>{{range .Values}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
<h2>JSON</h2><details><summary>the same as JSON</summary><pre>{{.JSON}}</pre></details>
</main></body></html>
`))

// writeHTML answers v (a resource's JSON view) as its HTML page.
func (s *Server) writeHTML(w http.ResponseWriter, r *http.Request, title string, v any) {
	raw, _ := json.MarshalIndent(v, "", "  ")
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	page := htmlPage{Title: title, JSON: string(raw)}
	root := s.absURL(r, "/")
	htmlLink := func(href string) string {
		if !strings.HasPrefix(href, root) {
			return href
		}
		u, err := url.Parse(href)
		if err != nil {
			return href
		}
		q := u.Query()
		q.Set("f", "html")
		u.RawQuery = q.Encode()
		return u.String()
	}
	for _, l := range asList(m["links"]) {
		l, _ := l.(map[string]any)
		href, _ := l["href"].(string)
		lk := link{Href: href, Rel: str(l["rel"]), Title: str(l["title"])}
		if typ := str(l["type"]); typ == mediaJSON || typ == mediaGeoJSON {
			lk.Href = htmlLink(href)
		}
		page.Links = append(page.Links, lk)
	}
	for _, c := range asList(m["collections"]) {
		c, _ := c.(map[string]any)
		row := map[string]any{"id": c["id"], "title": c["title"], "itemCount": c["itemCount"], "href": ""}
		for _, l := range asList(c["links"]) {
			if l, _ := l.(map[string]any); l["rel"] == "self" {
				row["href"] = htmlLink(str(l["href"]))
			}
		}
		if ext, ok := c["extent"].(map[string]any); ok {
			if sp, ok := ext["spatial"].(map[string]any); ok {
				b, _ := json.Marshal(sp["bbox"])
				row["bbox"] = string(b)
			}
		}
		page.Collections = append(page.Collections, row)
	}
	for _, c := range asList(m["conformsTo"]) {
		page.Conformance = append(page.Conformance, str(c))
	}
	if m["type"] == "Feature" || m["extent"] != nil {
		props, _ := m["properties"].(map[string]any)
		if m["extent"] != nil { // a collection
			props = map[string]any{"id": m["id"], "title": m["title"], "itemCount": m["itemCount"], "extent": m["extent"], "crs": m["crs"]}
		}
		for _, k := range sortedKeys(props) {
			page.Properties = append(page.Properties, [2]string{k, cell(props[k])})
		}
	}
	if feats := asList(m["features"]); m["type"] == "FeatureCollection" {
		cols := map[string]bool{}
		for _, f := range feats {
			f, _ := f.(map[string]any)
			p, _ := f["properties"].(map[string]any)
			for k := range p {
				cols[k] = true
			}
		}
		page.Columns = sortedKeys(cols)
		if page.Columns == nil {
			page.Columns = []string{}
		}
		base := strings.TrimSuffix(r.URL.Path, "/")
		for _, f := range feats {
			f, _ := f.(map[string]any)
			p, _ := f["properties"].(map[string]any)
			id := str(f["id"])
			row := htmlFeature{ID: id, Href: s.absURL(r, base+"/"+url.PathEscape(id)+"?f=html")}
			if g, ok := f["geometry"].(map[string]any); ok {
				row.Geometry = str(g["type"])
			}
			for _, c := range page.Columns {
				row.Values = append(row.Values, cell(p[c]))
			}
			page.Features = append(page.Features, row)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	w.WriteHeader(http.StatusOK)
	_ = ogcTemplate.Execute(w, page)
}

// asList returns v as a JSON array (nil when it is not one).
func asList(v any) []any { l, _ := v.([]any); return l }

// str returns v as a string ("" when it is not one).
func str(v any) string { s, _ := v.(string); return s }

// cell shows a JSON value in a table cell.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
