package search

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// fieldTypes maps the type names a collection's layer_config.fields may
// use to Elasticsearch field types. Plain names (string, integer, number)
// and Elasticsearch's own are both accepted.
var fieldTypes = map[string]string{
	"string": "keyword", "keyword": "keyword", "text": "text",
	"integer": "long", "long": "long",
	"number": "double", "double": "double", "float": "double",
	"boolean": "boolean", "date": "date",
}

// Mapping returns an index's mappings for a collection whose
// layer_config is layerConfig: the feature's identity as keywords, its
// geometry as geo_shape, its validity and transaction time as dates, and
// the properties that layer_config.fields declares with their types (as
// {"name": "integer", …}); other properties are mapped dynamically. A
// layer_config that declares fields wrongly is an error naming the field.
func Mapping(layerConfig json.RawMessage) (map[string]any, error) {
	props := map[string]any{}
	if len(bytes.TrimSpace(layerConfig)) > 0 {
		var lc struct {
			Fields json.RawMessage `json:"fields"`
		}
		if err := json.Unmarshal(layerConfig, &lc); err != nil {
			return nil, fmt.Errorf("error reading layer_config: %w", err)
		}
		if len(lc.Fields) > 0 && string(lc.Fields) != "null" {
			var fields map[string]string
			if err := json.Unmarshal(lc.Fields, &fields); err != nil {
				return nil, fmt.Errorf(`layer_config.fields must map property names to types such as {"name": "string", "population": "integer"}: %w`, err)
			}
			for _, name := range slices.Sorted(maps.Keys(fields)) {
				typ, ok := fieldTypes[strings.ToLower(fields[name])]
				if !ok {
					return nil, fmt.Errorf("layer_config.fields.%s: type %q is not one of %s", name, fields[name],
						strings.Join(slices.Sorted(maps.Keys(fieldTypes)), ", "))
				}
				if name == "" || strings.Contains(name, ".") {
					return nil, fmt.Errorf("layer_config.fields: property name %q must be non-empty and hold no '.'", name)
				}
				props[name] = map[string]any{"type": typ}
			}
		}
	}
	return map[string]any{
		"dynamic": true,
		"properties": map[string]any{
			"geoid":            map[string]any{"type": "keyword"},
			"external_id":      map[string]any{"type": "keyword"},
			"asset_id":         map[string]any{"type": "keyword"},
			"geometry":         map[string]any{"type": "geo_shape"},
			"valid_from":       map[string]any{"type": "date"},
			"transaction_time": map[string]any{"type": "date"},
			"properties":       map[string]any{"type": "object", "properties": props},
		},
	}, nil
}
