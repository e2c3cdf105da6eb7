package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// AttributeMapping selects, renames and casts a record's attributes before
// they are stored (inputs.attributes). Names are the source's: the
// id_attribute is read before the mapping, so it may be dropped or renamed.
type AttributeMapping struct {
	// Select keeps these attributes only (all when empty).
	Select []string `json:"select,omitempty"`
	// Rename stores an attribute under another name.
	Rename map[string]string `json:"rename,omitempty"`
	// Cast converts an attribute to integer, number (from a number, a
	// numeric string or a boolean: 1 or 0), string (numbers and booleans
	// as written, objects and arrays as JSON) or boolean (from true/false,
	// t/f, yes/no, y/n, 1/0); a value that cannot be converted rejects the
	// record. null stays null.
	Cast map[string]string `json:"cast,omitempty"`
}

// Cast types.
const (
	castInteger = "integer"
	castNumber  = "number"
	castString  = "string"
	castBoolean = "boolean"
)

// check lists what is wrong with m.
func (m *AttributeMapping) check() (errs []error) {
	kept := func(name string) bool { return len(m.Select) == 0 || slices.Contains(m.Select, name) }
	for _, n := range m.Select {
		if n == "" {
			errs = append(errs, errors.New(`"attributes": "select" names attributes, none empty`))
		}
	}
	stored := map[string]string{}
	for from, to := range m.Rename {
		switch {
		case from == "" || to == "":
			errs = append(errs, errors.New(`"attributes": "rename" maps a name to a name, none empty`))
		case !kept(from):
			errs = append(errs, fmt.Errorf(`"attributes": "rename" names %q, which "select" drops`, from))
		case stored[to] != "":
			errs = append(errs, fmt.Errorf(`"attributes": "rename" stores both %q and %q as %q`, stored[to], from, to))
		}
		stored[to] = from
	}
	for _, n := range m.Select {
		if _, renamed := m.Rename[n]; !renamed && stored[n] != "" {
			errs = append(errs, fmt.Errorf(`"attributes": %q is kept and is also what %q is renamed to`, n, stored[n]))
		}
	}
	for name, typ := range m.Cast {
		switch {
		case typ != castInteger && typ != castNumber && typ != castString && typ != castBoolean:
			errs = append(errs, fmt.Errorf(`"attributes": "cast" of %q is %q, want integer, number, string or boolean`, name, typ))
		case !kept(name):
			errs = append(errs, fmt.Errorf(`"attributes": "cast" names %q, which "select" drops`, name))
		}
	}
	return errs
}

// apply maps a record's attributes (numbers as json.Number) and returns
// them with their JSON text, or why the record cannot be mapped.
func (m *AttributeMapping) apply(props map[string]any) (map[string]any, []byte, error) {
	out := make(map[string]any, len(props))
	for name, v := range props {
		if len(m.Select) > 0 && !slices.Contains(m.Select, name) {
			continue
		}
		if typ, ok := m.Cast[name]; ok && v != nil {
			c, err := cast(v, typ)
			if err != nil {
				return nil, nil, fmt.Errorf("attribute %q: %w", name, err)
			}
			v = c
		}
		if to, ok := m.Rename[name]; ok {
			name = to
		}
		if _, dup := out[name]; dup {
			return nil, nil, fmt.Errorf("attribute %q: the mapping stores two attributes under that name", name)
		}
		out[name] = v
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, nil, fmt.Errorf("error encoding the mapped attributes: %w", err)
	}
	return out, b, nil
}

// cast converts one value to typ.
func cast(v any, typ string) (any, error) {
	fail := func() error {
		b, _ := json.Marshal(v)
		return fmt.Errorf("cannot cast %s to %s", b, typ)
	}
	switch typ {
	case castString:
		switch x := v.(type) {
		case string:
			return x, nil
		case json.Number:
			return x.String(), nil
		case bool:
			return strconv.FormatBool(x), nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fail()
		}
		return string(b), nil
	case castNumber, castInteger:
		var s string
		switch x := v.(type) {
		case json.Number:
			s = x.String()
		case string:
			s = strings.TrimSpace(x)
		case bool: // true is 1, false 0
			s = map[bool]string{true: "1", false: "0"}[x]
		default:
			return nil, fail()
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fail()
		}
		if typ == castNumber {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
		}
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, fail()
		}
		return json.Number(strconv.FormatInt(int64(f), 10)), nil
	case castBoolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case json.Number:
			switch x.String() {
			case "0":
				return false, nil
			case "1":
				return true, nil
			}
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true", "t", "yes", "y", "1":
				return true, nil
			case "false", "f", "no", "n", "0":
				return false, nil
			}
		}
		return nil, fail()
	}
	return nil, fail()
}
