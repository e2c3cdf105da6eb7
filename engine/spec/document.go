package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Limits that keep a hostile file from exhausting memory or the stack.
const (
	// maxDocumentValues bounds the values of one document after aliases are
	// expanded (a "billion laughs" file stops here).
	maxDocumentValues = 100_000
	// maxSourceValues bounds the values of all the documents of one file,
	// so that many small bombs, each under maxDocumentValues, cannot add up.
	maxSourceValues = 2 * maxDocumentValues
	// maxDepth bounds the nesting of one document.
	maxDepth = 100
)

// pos is a 1-based position in a spec file.
type pos struct{ Line, Col int }

// nodePos returns the position of a YAML node.
func nodePos(n *yaml.Node) pos { return pos{Line: n.Line, Col: n.Column} }

// document is one YAML document of a spec file, converted to JSON values
// (map[string]any, []any, string, int64, float64, bool, nil), with the YAML
// node of every value and map key indexed by JSON pointer.
type document struct {
	file  string
	pos   pos
	value any
	nodes map[string]*yaml.Node // pointer → value node
	keys  map[string]*yaml.Node // pointer → key node of a map entry
	kind  string                // the kind field, if a string
	name  string                // the name field, if a string

	// flagged holds the pointers pass 1 found wrong; pass 2 stays quiet
	// about them, so that one mistake is reported once.
	flagged map[string]bool
	// failed is set when pass 1 or 2 found anything wrong in the document.
	failed bool
}

// flag records that pass 1 found the value at ptr wrong.
func (d *document) flag(ptr string) {
	if d.flagged == nil {
		d.flagged = map[string]bool{}
	}
	d.flagged[ptr] = true
	d.failed = true
}

// suppressed reports whether pass 1 already found something wrong at ptr,
// inside it, or around it.
func (d *document) suppressed(ptr string) bool {
	for p := range d.flagged {
		if p == ptr || strings.HasPrefix(p, ptr+"/") || strings.HasPrefix(ptr, p+"/") {
			return true
		}
	}
	return false
}

// at returns the position of the value at ptr, falling back to the closest
// ancestor that has one.
func (d *document) at(ptr string) pos {
	for {
		if n, ok := d.nodes[ptr]; ok {
			return nodePos(n)
		}
		if ptr == "" {
			return d.pos
		}
		ptr = parentPointer(ptr)
	}
}

// keyAt returns the position of the key of the map entry at ptr, or of its
// value when it has no key.
func (d *document) keyAt(ptr string) pos {
	if n, ok := d.keys[ptr]; ok {
		return nodePos(n)
	}
	return d.at(ptr)
}

// errorAt builds an Error at p in the document's file.
func (d *document) errorAt(p pos, format string, args ...any) Error {
	return Error{File: d.file, Line: p.Line, Col: p.Col, Message: fmt.Sprintf(format, args...)}
}

// lookup returns the value at ptr.
func (d *document) lookup(ptr string) (any, bool) { return lookupPointer(d.value, ptr) }

// yamlLineRE pulls the line out of a yaml.v3 syntax error.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseSource splits a spec file into documents. Errors are syntax errors and
// values JSON cannot hold; a document with errors is left out.
func parseSource(src Source) (docs []*document, errs Errors) {
	if e := checkEncoding(src); e != nil {
		return nil, Errors{*e}
	}
	data, derr := acceptYAMLDirective(src)
	if derr != nil {
		return nil, Errors{*derr}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	spent := 0 // values of the file's documents so far
	for {
		var root yaml.Node
		err := decodeNode(dec, &root)
		if errors.Is(err, io.EOF) {
			return docs, errs
		}
		if err != nil {
			line, msg := 0, err.Error()
			if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
				line, _ = strconv.Atoi(m[1])
				msg = m[2]
			}
			errs = append(errs, yamlSyntaxError(src, line, trimYAMLPrefix(msg)))
			return docs, errs
		}
		if len(root.Content) == 0 {
			continue
		}
		body := root.Content[0]
		if body.Kind == yaml.ScalarNode && body.ShortTag() == "!!null" {
			continue // an empty document, e.g. after a trailing ---
		}
		if isListOfDocuments(body) {
			errs = append(errs, Error{File: src.Name, Line: body.Line, Col: body.Column,
				Message: "the file is a YAML list of specs; write each spec as a document of its own, without the leading -, and separate them with --- lines"})
			continue
		}
		c := &converter{doc: &document{
			file:  src.Name,
			pos:   nodePos(body),
			nodes: map[string]*yaml.Node{},
			keys:  map[string]*yaml.Node{},
		}, active: map[*yaml.Node]bool{}, own: ownNodes(body), budget: min(maxDocumentValues, maxSourceValues-spent)}
		v, ok := c.convert(body, "", 0)
		errs = append(errs, c.errs...)
		spent += c.count
		if c.full && c.budget < maxDocumentValues {
			return docs, errs // the file's budget is spent: stop here
		}
		if !ok || len(c.errs) > 0 {
			continue
		}
		c.doc.value = v
		if m, isMap := v.(map[string]any); isMap {
			c.doc.kind, _ = m["kind"].(string)
			c.doc.name, _ = m["name"].(string)
		}
		docs = append(docs, c.doc)
	}
}

// isListOfDocuments reports whether a document is a list of mappings that
// each have a kind: specs written as list items instead of documents.
func isListOfDocuments(n *yaml.Node) bool {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return false
	}
	for _, item := range n.Content {
		if item.Kind != yaml.MappingNode || !hasKey(item, "kind") {
			return false
		}
	}
	return true
}

// hasKey reports whether a mapping node has the key.
func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

// ownNodes collects the nodes written in one document (not following
// aliases), so that an alias to an anchor of an earlier document shows.
func ownNodes(root *yaml.Node) map[*yaml.Node]bool {
	own := map[*yaml.Node]bool{}
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || own[n] {
			return
		}
		own[n] = true
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	return own
}

// decodeNode reads the next document, turning a panic of the YAML parser on
// malformed input into an error: a spec file must never crash wf.
func decodeNode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: the parser failed on this file (%v)", r)
		}
	}()
	return dec.Decode(n)
}

// trimYAMLPrefix drops the "yaml: " prefix of yaml.v3 messages.
func trimYAMLPrefix(msg string) string {
	if len(msg) > 6 && msg[:6] == "yaml: " {
		return msg[6:]
	}
	return msg
}

// converter turns the YAML nodes of one document into JSON values.
type converter struct {
	doc    *document
	count  int
	budget int                 // the most values count may reach
	active map[*yaml.Node]bool // anchors being expanded, to catch recursive aliases
	own    map[*yaml.Node]bool // the nodes written in this document
	errs   Errors
	full   bool // the value budget is spent; stop reporting
}

// fail records a conversion error at node n.
func (c *converter) fail(n *yaml.Node, format string, args ...any) {
	c.errs = append(c.errs, c.doc.errorAt(nodePos(n), format, args...))
}

// convert converts n, found at ptr, and indexes it.
func (c *converter) convert(n *yaml.Node, ptr string, depth int) (any, bool) {
	c.count++
	if c.count > c.budget {
		switch {
		case c.full:
		case c.budget < maxDocumentValues:
			c.fail(n, "file too large: more than %d values in its documents once aliases are expanded", maxSourceValues)
		default:
			c.fail(n, "document too large: more than %d values once aliases are expanded", maxDocumentValues)
		}
		c.full = true
		return nil, false
	}
	if depth > maxDepth {
		c.fail(n, "document nested too deep: more than %d levels", maxDepth)
		return nil, false
	}
	c.doc.nodes[ptr] = n
	switch n.Kind {
	case yaml.AliasNode:
		target := n.Alias
		if target == nil || c.active[target] {
			c.fail(n, "alias *%s refers to a node that contains it", n.Value)
			return nil, false
		}
		if !c.own[target] {
			c.fail(n, "alias *%s refers to an anchor of an earlier document; anchors do not cross ---, and other YAML parsers refuse this: define &%s in this document or repeat the value", n.Value, n.Value)
			return nil, false
		}
		c.active[target] = true
		v, ok := c.convert(target, ptr, depth+1)
		delete(c.active, target)
		c.doc.nodes[ptr] = n // errors about the whole value point at the alias
		return v, ok
	case yaml.MappingNode:
		return c.mapping(n, ptr, depth)
	case yaml.SequenceNode:
		if tag := n.ShortTag(); tag != "!!seq" {
			c.fail(n, "unsupported YAML tag %s on a sequence", tag)
			return nil, false
		}
		out := make([]any, 0, len(n.Content))
		ok := true
		for i, item := range n.Content {
			v, itemOK := c.convert(item, ptr+"/"+strconv.Itoa(i), depth+1)
			ok = ok && itemOK
			out = append(out, v)
		}
		return out, ok
	case yaml.ScalarNode:
		return c.scalar(n)
	default:
		c.fail(n, "unsupported YAML node")
		return nil, false
	}
}

// mapping converts a YAML mapping. Keys must be unique scalars; merge keys
// (<<: *anchor) are expanded, explicit keys winning over merged ones.
func (c *converter) mapping(n *yaml.Node, ptr string, depth int) (any, bool) {
	if tag := n.ShortTag(); tag != "!!map" {
		c.fail(n, "unsupported YAML tag %s on a mapping", tag)
		return nil, false
	}
	out := map[string]any{}
	ok := true
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, n.Content[i+1])
		}
	}
	// Earlier merged mappings win over later ones: apply them last.
	for i := len(merges) - 1; i >= 0; i-- {
		ok = c.merge(out, merges[i], ptr, depth) && ok
	}
	seen := map[string]*yaml.Node{}
	secondDoc := false // a second kind at the top: the rest is another document
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			c.fail(k, "a mapping key must be a string")
			ok = false
			continue
		}
		if first, dup := seen[k.Value]; dup {
			ok = false
			switch {
			case secondDoc:
			case ptr == "" && k.Value == "kind":
				c.fail(k, "a second kind (first at line %d): a new spec starts here; put a --- line before it", first.Line)
				secondDoc = true
			default:
				c.fail(k, "duplicate key %q (first at line %d)", k.Value, first.Line)
			}
			continue
		}
		seen[k.Value] = k
		child := joinPointer(ptr, k.Value)
		c.doc.keys[child] = k
		val, valOK := c.convert(v, child, depth+1)
		ok = ok && valOK
		out[k.Value] = val
	}
	c.doc.nodes[ptr] = n
	return out, ok
}

// merge copies the entries of the mapping (or sequence of mappings) that a
// merge key names into out.
func (c *converter) merge(out map[string]any, src *yaml.Node, ptr string, depth int) bool {
	target := src
	if target.Kind == yaml.AliasNode {
		target = target.Alias
	}
	switch {
	case target == nil:
		c.fail(src, "a merge key (<<) needs a mapping")
		return false
	case target.Kind == yaml.SequenceNode && src.Kind != yaml.AliasNode:
		ok := true
		for i := len(target.Content) - 1; i >= 0; i-- {
			item := target.Content[i]
			if item.Kind == yaml.SequenceNode {
				c.fail(item, "a merge key (<<) needs a mapping or a list of mappings")
				ok = false
				continue
			}
			ok = c.merge(out, item, ptr, depth) && ok
		}
		return ok
	case target.Kind != yaml.MappingNode:
		c.fail(src, "a merge key (<<) needs a mapping or a list of mappings")
		return false
	}
	if src.Kind == yaml.AliasNode && !c.own[target] {
		c.fail(src, "alias *%s refers to an anchor of an earlier document; anchors do not cross ---, and other YAML parsers refuse this: define &%s in this document or repeat the value", src.Value, src.Value)
		return false
	}
	if c.active[target] {
		c.fail(src, "alias *%s refers to a node that contains it", src.Value)
		return false
	}
	c.active[target] = true
	v, ok := c.convert(target, ptr, depth+1)
	delete(c.active, target)
	if m, isMap := v.(map[string]any); isMap {
		for k, val := range m {
			out[k] = val
		}
	}
	return ok
}

// scalar converts a YAML scalar to a JSON value.
func (c *converter) scalar(n *yaml.Node) (any, bool) {
	switch tag := n.ShortTag(); tag {
	case "!!null":
		return nil, true
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, true
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			c.fail(n, "invalid boolean %q", n.Value)
			return nil, false
		}
		return b, true
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return i, true
		}
		return c.float(n)
	case "!!float":
		return c.float(n)
	default:
		c.fail(n, "unsupported YAML tag %s", tag)
		return nil, false
	}
}

// float converts a YAML number that does not fit an int64.
func (c *converter) float(n *yaml.Node) (any, bool) {
	var f float64
	if err := n.Decode(&f); err != nil {
		c.fail(n, "invalid number %q", n.Value)
		return nil, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		c.fail(n, "number %s has no JSON value", n.Value)
		return nil, false
	}
	return f, true
}
