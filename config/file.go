package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Limits that keep a hostile configuration file from exhausting memory or
// the stack.
const (
	// maxFileValues bounds the values of the file after aliases are
	// expanded (a "billion laughs" file stops here).
	maxFileValues = 100_000
	// maxFileDepth bounds the nesting of the file.
	maxFileDepth = 100
)

// yamlFile is a parsed configuration file: its root node and, by JSON
// pointer, the node of every value and of every mapping key, so that schema
// violations and bad values can be placed at a line and column.
type yamlFile struct {
	path   string
	root   *yaml.Node
	value  any                   // the document as JSON-like values, for the schema
	values map[string]*yaml.Node // JSON pointer → value node
	keys   map[string]*yaml.Node // JSON pointer → key node of a mapping entry

	// count and active bound convert: values converted so far, and the
	// anchors being expanded (to catch an alias inside its own anchor).
	count  int
	active map[*yaml.Node]bool
}

// loadFile applies the configuration file at path to c. via says what
// named the file ("" for the default wf.yaml), for the error when it cannot
// be read.
func (c *Config) loadFile(path, via string) Errors {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		msg := fmt.Sprintf("cannot read the configuration file: %v", err)
		if via != "" {
			msg = fmt.Sprintf("cannot read the configuration file named by %s: %v", via, err)
		}
		return Errors{{Source: fileSource(path, nil), Message: msg}}
	}
	c.file = path
	f, errs := parseFile(path, data)
	if len(errs) > 0 || f == nil {
		return errs
	}
	if errs := f.checkSchema(); len(errs) > 0 {
		return errs
	}
	return c.applyFile(f)
}

// fileSource is a position in a file (the file itself when n is nil).
func fileSource(path string, n *yaml.Node) Source {
	s := Source{Kind: SourceFile, Name: path}
	if n != nil {
		s.Line, s.Col = n.Line, n.Column
	}
	return s
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseFile parses one YAML document and indexes its nodes. It returns nil
// and no error for a file with no content.
func parseFile(path string, data []byte) (*yamlFile, Errors) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := decodeNode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, Errors{yamlSyntaxError(path, err)}
	}
	var extra yaml.Node
	switch err := decodeNode(dec, &extra); {
	case err == nil:
		return nil, Errors{{Source: fileSource(path, &extra), Message: "expected one YAML document, found a second one"}}
	case !errors.Is(err, io.EOF):
		return nil, Errors{yamlSyntaxError(path, err)}
	}
	if len(doc.Content) == 0 || doc.Content[0].ShortTag() == "!!null" {
		return nil, nil
	}
	f := &yamlFile{path: path, root: doc.Content[0], values: map[string]*yaml.Node{}, keys: map[string]*yaml.Node{},
		active: map[*yaml.Node]bool{}}
	var errs Errors
	f.value = f.convert(f.root, "", 0, &errs)
	return f, errs
}

// decodeNode reads the next document, turning a panic of the YAML parser on
// malformed input into an error: a configuration file must never crash wf.
func decodeNode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: the parser failed on this file (%v)", r)
		}
	}()
	return dec.Decode(n)
}

// yamlSyntaxError places a YAML parser error at its line.
func yamlSyntaxError(path string, err error) Error {
	msg := err.Error()
	src := Source{Kind: SourceFile, Name: path}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		src.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return Error{Source: src, Message: "invalid YAML: " + msg}
}

// convert turns a node into the JSON-like value the schema validates (maps,
// slices, strings, json numbers, bools, nil), indexing nodes by pointer. It
// stops, with an error, at an alias inside its own anchor and past
// maxFileValues or maxFileDepth.
func (f *yamlFile) convert(n *yaml.Node, ptr string, depth int, errs *Errors) any {
	f.count++
	switch {
	case f.count == maxFileValues+1:
		*errs = append(*errs, Error{Source: fileSource(f.path, n), Field: fieldPath(ptr),
			Message: fmt.Sprintf("the file is too large: more than %d values once aliases are expanded", maxFileValues)})
		return nil
	case f.count > maxFileValues:
		return nil
	case depth > maxFileDepth:
		*errs = append(*errs, Error{Source: fileSource(f.path, n), Field: fieldPath(ptr),
			Message: fmt.Sprintf("nested too deep: more than %d levels", maxFileDepth)})
		return nil
	}
	f.values[ptr] = n
	if n.Kind == yaml.AliasNode {
		target := n.Alias
		if target == nil || f.active[target] {
			*errs = append(*errs, Error{Source: fileSource(f.path, n), Field: fieldPath(ptr),
				Message: fmt.Sprintf("alias *%s refers to a node that contains it", n.Value)})
			return nil
		}
		f.active[target] = true
		v := f.convert(target, ptr, depth+1, errs)
		delete(f.active, target)
		f.values[ptr] = n
		return v
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				*errs = append(*errs, Error{Source: fileSource(f.path, k), Message: "expected a field name (merge keys and complex keys are not supported)"})
				continue
			}
			child := ptr + "/" + escapePointer(k.Value)
			if _, dup := m[k.Value]; dup {
				*errs = append(*errs, Error{Source: fileSource(f.path, k), Field: fieldPath(child), Message: "duplicate field"})
				continue
			}
			f.keys[child] = k
			m[k.Value] = f.convert(v, child, depth+1, errs)
		}
		return m
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, item := range n.Content {
			s[i] = f.convert(item, ptr+"/"+strconv.Itoa(i), depth+1, errs)
		}
		return s
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err == nil {
				return b
			}
		case "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err == nil {
				switch v := v.(type) {
				case int:
					return int64(v)
				case int64, uint64, float64:
					return v
				}
			}
		}
		return n.Value
	default:
		return nil
	}
}

// escapePointer escapes a key for a JSON pointer.
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// unescapePointer undoes escapePointer.
func unescapePointer(s string) string {
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}

// fieldPath turns a JSON pointer into a field path: "/tokens/0/role" →
// "tokens[0].role".
func fieldPath(ptr string) string {
	var b strings.Builder
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if ptr == "" {
			break
		}
		if _, err := strconv.Atoi(seg); err == nil {
			fmt.Fprintf(&b, "[%s]", seg)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(unescapePointer(seg))
	}
	return b.String()
}

// node returns the value node at ptr, following aliases.
func (f *yamlFile) node(ptr string) *yaml.Node {
	n := f.values[ptr]
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// applyFile sets every leaf the file gives. The schema has checked the
// shapes; parsing can still refuse a value (an integer out of range).
func (c *Config) applyFile(f *yamlFile) Errors {
	var errs Errors
	for _, l := range leaves() {
		ptr := "/" + strings.ReplaceAll(l.key, ".", "/")
		n := f.node(ptr)
		if n == nil {
			continue
		}
		src := fileSource(f.path, f.values[ptr])
		var v reflect.Value
		switch l.typ {
		case tokensType, warehousesType:
			// Lists of mappings decode into the field's type as they are.
			p := reflect.New(l.typ)
			if err := n.Decode(p.Interface()); err != nil {
				errs = append(errs, Error{Source: src, Field: l.key, Message: "expected " + l.expected()})
				continue
			}
			v = p.Elem()
		case stringsType:
			items := make([]string, 0, len(n.Content))
			for _, item := range n.Content {
				for item.Kind == yaml.AliasNode && item.Alias != nil {
					item = item.Alias
				}
				items = append(items, item.Value)
			}
			v = reflect.ValueOf(items)
		default:
			var err error
			if v, err = l.parse(n.Value); err != nil {
				errs = append(errs, Error{Source: src, Field: l.key, Message: err.Error()})
				continue
			}
		}
		c.set(l, v, src)
		// Record where every part of a list or token is, for Validate.
		for p, pn := range f.values {
			if strings.HasPrefix(p, ptr+"/") {
				c.setOrigin(fieldPath(p), fileSource(f.path, pn))
			}
		}
	}
	return errs
}

// typeAt returns the Go type of the value at a JSON pointer in Config (nil
// when the pointer leads nowhere), to name the fields a mapping may hold.
func typeAt(ptr string) reflect.Type {
	t := reflect.TypeFor[Config]()
	if ptr == "" {
		return t
	}
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		switch t.Kind() {
		case reflect.Struct:
			var next reflect.Type
			for i := range t.NumField() {
				if f := t.Field(i); f.IsExported() && yamlName(f) == unescapePointer(seg) {
					next = f.Type
				}
			}
			if next == nil {
				return nil
			}
			t = next
		case reflect.Slice:
			t = t.Elem()
		default:
			return nil
		}
	}
	return t
}

// fieldNames lists the yaml names of a struct type's fields.
func fieldNames(t reflect.Type) []string {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && yamlName(f) != "" {
			names = append(names, yamlName(f))
		}
	}
	return names
}

// unknownFields returns the keys of the mapping at ptr that its type lacks,
// in file order.
func (f *yamlFile) unknownFields(ptr string) []string {
	known := fieldNames(typeAt(ptr))
	n := f.node(ptr)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !slices.Contains(known, k) {
			out = append(out, k)
		}
	}
	return out
}

// describe words a node's value for an error message ("" for a secret,
// which is never shown).
func describe(n *yaml.Node, secret bool) string {
	if n == nil {
		return "nothing"
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch {
	case n.ShortTag() == "!!null":
		return "null"
	case secret:
		return ""
	case n.ShortTag() == "!!str":
		return strconv.Quote(n.Value)
	default:
		return n.Value
	}
}
