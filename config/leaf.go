package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// leaf is one settable value of Config: a field that is not a nested
// section. The table of leaves is derived from Config's yaml tags, so the
// file keys, the environment variables and the flags cannot drift apart.
type leaf struct {
	key   string       // yaml path joined by ".", e.g. "retention.completed"
	env   string       // WF_RETENTION_COMPLETED
	index []int        // reflect field index from Config
	typ   reflect.Type // the field's type
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	tokensType   = reflect.TypeFor[[]Token]()
	stringsType  = reflect.TypeFor[[]string]()
	// warehousesType is warehouse.connections: a JSON array in WF_WAREHOUSE_CONNECTIONS.
	warehousesType = reflect.TypeFor[[]WarehouseConnection]()
)

// leaves returns the table of Config's leaves in field order. It is built
// once and never changed.
var leaves = sync.OnceValue(func() []leaf {
	var out []leaf
	var walk func(t reflect.Type, prefix []string, index []int)
	walk = func(t reflect.Type, prefix []string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			name := yamlName(f)
			if !f.IsExported() || name == "" {
				continue
			}
			path := append(slices.Clone(prefix), name)
			idx := append(slices.Clone(index), i)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, path, idx)
				continue
			}
			out = append(out, leaf{
				key:   strings.Join(path, "."),
				env:   "WF_" + strings.ToUpper(strings.Join(path, "_")),
				index: idx,
				typ:   f.Type,
			})
		}
	}
	walk(reflect.TypeFor[Config](), nil, nil)
	return out
})

// yamlName is a field's name in YAML ("" when the field is not in YAML).
func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// leafByKey finds a leaf by its field path.
func leafByKey(key string) (leaf, bool) {
	for _, l := range leaves() {
		if l.key == key {
			return l, true
		}
	}
	return leaf{}, false
}

// Environment variables read besides the one per leaf.
const (
	// EnvConfigFile names the configuration file when --config is not given.
	EnvConfigFile = "WF_CONFIG"
	// EnvNameAlias is the seed's name of the service-name variable;
	// WF_NAME wins over it.
	EnvNameAlias = "NAME"
	// EnvSecretKeyAlias is the first name of secrets.keys' variable
	// (secretbox.EnvKey); WF_SECRETS_KEYS wins over it.
	EnvSecretKeyAlias = "WF_SECRET_KEY"
)

// EnvVars returns the environment variable of every leaf of Config, in field
// order: WF_ plus the yaml path in capitals joined by "_". Lists take
// comma-separated values, except WF_TOKENS, which takes a JSON array.
func EnvVars() []string { return leafStrings(func(l leaf) string { return l.env }) }

// Keys returns the field path of every leaf of Config, in field order
// ("database_url", …, "retention.completed", …). Load's Options.Flags are
// keyed by these.
func Keys() []string { return leafStrings(func(l leaf) string { return l.key }) }

// leafStrings returns one string of every leaf, in field order.
func leafStrings(of func(leaf) string) []string {
	ls := leaves()
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = of(l)
	}
	return out
}

// FlagName is the command-line flag that sets the field at key, by
// convention: "--" plus the key with "_" and "." turned into "-".
func FlagName(key string) string {
	return "--" + strings.NewReplacer("_", "-", ".", "-").Replace(key)
}

// secret reports whether the leaf's value must never be echoed.
func (l leaf) secret() bool {
	switch l.key {
	case "database_url", "database.session_url", "database.read_url", "catalog.database_url", "elasticsearch.password", "elasticsearch.api_key", "secrets.keys":
		return true
	}
	return l.typ == tokensType || l.typ == warehousesType
}

// field returns the leaf's field in c.
func (l leaf) field(c *Config) reflect.Value {
	return reflect.ValueOf(c).Elem().FieldByIndex(l.index)
}

// expected words what a value of the leaf looks like.
func (l leaf) expected() string {
	switch {
	case l.typ == durationType:
		return "a duration such as 30s, 5m or 1h30m"
	case l.typ == tokensType:
		return `a list of tokens, each {name, role, token or token_sha256, catalogs}`
	case l.typ == stringsType:
		return "a list of strings"
	case l.typ == warehousesType:
		return "a list of connections, each {name, type, url or project, catalogs, tables}"
	}
	switch l.typ.Kind() {
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Bool:
		return "true or false"
	default:
		return "a string"
	}
}

// parse reads a value of the leaf from text (an environment variable or a
// flag). Lists are comma-separated; tokens are a JSON array. The error says
// what was expected and, unless the leaf is secret, what was given.
func (l leaf) parse(s string) (reflect.Value, error) {
	bad := func() error {
		if l.secret() {
			return fmt.Errorf("expected %s", l.expected())
		}
		return fmt.Errorf("expected %s, got %q", l.expected(), s)
	}
	v := reflect.New(l.typ).Elem()
	switch {
	case l.typ == durationType:
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return v, bad()
		}
		v.SetInt(int64(d))
	case l.typ == tokensType:
		ts, err := parseTokensJSON(s)
		if err != nil {
			return v, fmt.Errorf("expected a JSON array of tokens such as "+
				`[{"name":"ci","role":"client","token":"…"}]: %w`, err)
		}
		v.Set(reflect.ValueOf(ts))
	case l.typ == warehousesType:
		ws, err := parseJSONList[WarehouseConnection](s)
		if err != nil {
			return v, fmt.Errorf("expected a JSON array of connections such as "+
				`[{"name":"dwh","type":"postgres","url":"postgres://…","catalogs":["demo"],"tables":["public.sales"]}]: %w`, err)
		}
		v.Set(reflect.ValueOf(ws))
	case l.typ == stringsType:
		var items []string
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		v.Set(reflect.ValueOf(items))
	case l.typ.Kind() == reflect.Int || l.typ.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, l.typ.Bits())
		if err != nil {
			return v, bad()
		}
		v.SetInt(n)
	case l.typ.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return v, bad()
		}
		v.SetBool(b)
	case l.typ.Kind() == reflect.String:
		v.SetString(s)
	default:
		return v, fmt.Errorf("field %s has unsupported type %s", l.key, l.typ)
	}
	return v, nil
}

// parseTokensJSON decodes a JSON array of tokens, refusing unknown fields.
func parseTokensJSON(s string) ([]Token, error) { return parseJSONList[Token](s) }

// parseJSONList decodes a JSON array, refusing unknown fields.
func parseJSONList[T any](s string) ([]T, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var ts []T
	if err := dec.Decode(&ts); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("invalid JSON at offset %d", syn.Offset)
		}
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected text after the array")
	}
	return ts, nil
}

// set stores a parsed value in c and records where it came from, forgetting
// the origins of what it replaces.
func (c *Config) set(l leaf, v reflect.Value, src Source) {
	l.field(c).Set(v)
	c.forgetOrigins(l.key)
	c.setOrigin(l.key, src)
}

// setOrigin records where the value at path came from.
func (c *Config) setOrigin(path string, src Source) {
	if c.origins == nil {
		c.origins = map[string]Source{}
	}
	c.origins[path] = src
}

// forgetOrigins drops the origins of path and everything below it.
func (c *Config) forgetOrigins(path string) {
	for k := range c.origins {
		if k == path || strings.HasPrefix(k, path+".") || strings.HasPrefix(k, path+"[") {
			delete(c.origins, k)
		}
	}
}

// parentPath returns the field path one level up: "tokens[0].role" →
// "tokens[0]" → "tokens" → "".
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}
