package reporters_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
)

func TestRecordMarshalsMapsAsObjects(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(reporters.Envelope{Status: reporters.RecordSuccess, Record: reporters.Record{Type: "Feature"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"SUCCESS","message":null,"record":{"type":"Feature","geometry":null,"properties":{},"stats":{},"system":{}}}`, string(b))

	// Absent keys are omitted, present ones kept.
	b, err = json.Marshal(reporters.Record{Type: "Feature", ID: "x", System: map[string]any{"geoid": "g"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"Feature","id":"x","geometry":null,"properties":{},"stats":{},"system":{"geoid":"g"}}`, string(b))
}

func TestRecordUnmarshal(t *testing.T) {
	t.Parallel()
	var r reporters.Record
	require.NoError(t, json.Unmarshal([]byte(`{"type":"Feature","geometry":null,"properties":{"big":12345678901234567890}}`), &r))
	require.Nil(t, r.Geometry, "a null geometry decodes as nil")
	require.Equal(t, map[string]any{}, r.Stats)
	require.Equal(t, map[string]any{}, r.System)
	require.Equal(t, json.Number("12345678901234567890"), r.Properties["big"], "large integers are not rounded")

	b, err := json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"Feature","geometry":null,"properties":{"big":12345678901234567890},"stats":{},"system":{}}`, string(b))
}

func TestConstructors(t *testing.T) {
	t.Parallel()
	ok := reporters.Success(reporters.Record{Type: "Feature", ID: "1", Properties: map[string]any{"a": 1}})
	require.Equal(t, reporters.RecordSuccess, ok.Status)
	require.Nil(t, ok.Message)
	require.Equal(t, map[string]any{}, ok.Record.Stats)
	require.Equal(t, map[string]any{}, ok.Record.System)

	input := map[string]any{"CODE": "305", "NAME": nil}
	rej := reporters.Rejected(input, map[string]any{reporters.SystemGeoID: "g1"}, "NAME is required")
	b, err := json.Marshal(rej)
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"REJECTED","message":"NAME is required","record":{
		"type":"Feature","id":"g1","geometry":null,
		"properties":{"CODE":"305","NAME":null},"stats":{},"system":{"geoid":"g1"}}}`, string(b))

	rej = reporters.Rejected(nil, nil, "empty")
	require.Empty(t, rej.Record.ID)
	require.Equal(t, map[string]any{}, rej.Record.Properties)

	failed := reporters.Failed(reporters.Record{Type: "Feature", Stats: map[string]any{"area": 1.5}}, "timeout")
	require.Equal(t, reporters.RecordFailed, failed.Status)
	require.Equal(t, "timeout", *failed.Message)
	require.Equal(t, map[string]any{"area": 1.5}, failed.Record.Stats)

	require.True(t, reporters.RecordRejected.Valid())
	require.False(t, reporters.RecordStatus("OK").Valid())
}
