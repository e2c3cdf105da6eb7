package api

import (
	"encoding/json"
	"testing"
	"time"
)

// TestDecodeStrictShape checks the body shape walker: null only where a
// field is tagged nullable, pointers as the client wrote them (through
// embedded structs, arrays and maps), free-form members left alone.
func TestDecodeStrictShape(t *testing.T) {
	t.Parallel()
	type inner struct {
		N int `json:"n"`
	}
	type embedded struct {
		Owner string `json:"owner_id"`
	}
	type req struct {
		embedded
		Flag    bool              `json:"flag"`
		Maybe   json.RawMessage   `json:"maybe" wf:"nullable"`
		Free    json.RawMessage   `json:"free"`
		List    []string          `json:"list"`
		Nested  []inner           `json:"nested"`
		ByName  map[string]inner  `json:"by_name"`
		At      *time.Time        `json:"at"`
		Small   int16             `json:"small"`
		Unknown map[string]any    `json:"any"`
		Strs    map[string]string `json:"strs"`
	}
	for _, tc := range []struct{ body, pointer string }{
		{`{"flag": null}`, "/flag"},
		{`{"owner_id": 5}`, "/owner_id"},
		{`{"owner_id": null}`, "/owner_id"},
		{`{"list": ["a", null]}`, "/list/1"},
		{`{"nested": [{"n": 1}, {"n": "x"}]}`, "/nested/1/n"},
		{`{"by_name": {"a/b": {"n": null}}}`, "/by_name/a~1b/n"},
		{`{"at": "yesterday"}`, "/at"},
		{`{"at": null}`, "/at"},
		{`{"small": 40000}`, "/small"},
		{`{"small": 1.5}`, "/small"},
		{`{"free": null}`, "/free"},
		{`{"strs": {"k": 1}}`, "/strs/k"},
	} {
		var r req
		p := decodeStrict([]byte(tc.body), &r)
		if p == nil || len(p.Errors) != 1 || p.Errors[0].Pointer == nil || *p.Errors[0].Pointer != tc.pointer {
			t.Errorf("%s: want a problem at %s, got %+v", tc.body, tc.pointer, p)
		}
	}
	for _, body := range []string{
		`{"maybe": null}`,
		`{"free": {"a": null, "b": [null]}}`,
		`{"any": {"a": null}}`,
		`{"owner_id": "w", "flag": false, "at": "2026-01-02T15:04:05Z", "small": -32768, "nested": [], "list": []}`,
	} {
		var r req
		if p := decodeStrict([]byte(body), &r); p != nil {
			t.Errorf("%s: want no problem, got %+v", body, p)
		}
	}
}
