package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Mask replaces every secret in Masked output.
const Mask = "***"

// Masked returns a deep copy of c fit for printing: the database password
// and every token (plain or hashed) replaced by Mask.
func (c *Config) Masked() *Config {
	out := c.clone()
	out.DatabaseURL = MaskDatabaseURL(c.DatabaseURL)
	out.Database.SessionURL = MaskDatabaseURL(c.Database.SessionURL)
	out.Database.ReadURL = MaskDatabaseURL(c.Database.ReadURL)
	out.Catalog.DatabaseURL = MaskDatabaseURL(c.Catalog.DatabaseURL)
	for i := range out.Warehouse.Connections {
		out.Warehouse.Connections[i].URL = MaskDatabaseURL(out.Warehouse.Connections[i].URL)
	}
	for _, secret := range []*string{&out.Elasticsearch.Password, &out.Elasticsearch.APIKey} {
		if *secret != "" {
			*secret = Mask
		}
	}
	for i, k := range out.Secrets.Keys {
		out.Secrets.Keys[i] = maskKeyEntry(k)
	}
	for i := range out.Tokens {
		if out.Tokens[i].Token != "" {
			out.Tokens[i].Token = Mask
		}
		if out.Tokens[i].TokenSHA256 != "" {
			out.Tokens[i].TokenSHA256 = Mask
		}
	}
	return out
}

// maskKeyEntry hides the key of a secrets.keys entry given inline; an
// entry naming a file shows it (the path is no secret).
func maskKeyEntry(entry string) string {
	id, rest, ok := strings.Cut(strings.TrimSpace(entry), ":")
	if ok && strings.HasPrefix(rest, "file:") {
		return entry
	}
	if !ok || strings.ContainsAny(id, " \t") || len(id) > 32 {
		return Mask
	}
	return id + ":" + Mask
}

// dsnPasswordRE finds the password of a key=value connection string.
var dsnPasswordRE = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)

// MaskDatabaseURL hides the password of a connection string, in a URL's
// user info or query, or in key=value pairs. A URL it cannot parse is
// masked whole.
func MaskDatabaseURL(s string) string {
	if s == "" {
		return ""
	}
	if !strings.Contains(s, "://") {
		return dsnPasswordRE.ReplaceAllString(s, "${1}"+Mask)
	}
	u, err := url.Parse(s)
	if err != nil {
		return Mask
	}
	// url.URL escapes '*'; a placeholder of plain letters is swapped after.
	const placeholder = "wfmaskedpassword"
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), placeholder)
		}
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", placeholder)
		u.RawQuery = q.Encode()
	}
	return strings.ReplaceAll(u.String(), placeholder, Mask)
}

// MarshalYAML writes the configuration in the shape of wf.yaml, durations
// as text (30s, 720h). It does not mask: marshal Masked() for display.
func (c Config) MarshalYAML() (any, error) {
	return encode(reflect.ValueOf(c)).(ordered).yamlNode()
}

// MarshalJSON writes the configuration with wf.yaml's field names, in
// field order, durations as text. It does not mask: marshal Masked() for
// display.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(encode(reflect.ValueOf(c)))
}

// ordered is a mapping that keeps its fields in struct order.
type ordered []orderedField

type orderedField struct {
	key   string
	value any
}

// encode turns a configuration value into plain values and ordered
// mappings: structs by their yaml names (omitempty honoured), durations as
// text, nil lists as empty lists.
func encode(v reflect.Value) any {
	switch {
	case v.Type() == durationType:
		return FormatDuration(time.Duration(v.Int()))
	case v.Kind() == reflect.Struct:
		var out ordered
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name := yamlName(f)
			if !f.IsExported() || name == "" {
				continue
			}
			fv := v.Field(i)
			empty := fv.IsZero() || (fv.Kind() == reflect.Slice && fv.Len() == 0)
			if empty && strings.Contains(f.Tag.Get("yaml"), ",omitempty") {
				continue
			}
			out = append(out, orderedField{name, encode(fv)})
		}
		return out
	case v.Kind() == reflect.Slice:
		items := make([]any, v.Len())
		for i := range items {
			items[i] = encode(v.Index(i))
		}
		return items
	default:
		return v.Interface()
	}
}

// MarshalJSON writes the fields in order.
func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, fmt.Errorf("error encoding %s: %w", f.key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// MarshalYAML writes the fields in order.
func (o ordered) MarshalYAML() (any, error) { return o.yamlNode() }

// yamlNode builds the mapping node of o.
func (o ordered) yamlNode() (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, f := range o {
		var k, v yaml.Node
		if err := k.Encode(f.key); err != nil {
			return nil, err
		}
		if err := v.Encode(f.value); err != nil {
			return nil, fmt.Errorf("error encoding %s: %w", f.key, err)
		}
		n.Content = append(n.Content, &k, &v)
	}
	return n, nil
}
