package reporters_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/reporters/reportertest"
)

func TestValidateEnvelopeSeedExample(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "seed_envelope.json"))
	require.NoError(t, err)
	env, err := reporters.ValidateEnvelope(raw)
	require.NoError(t, err)
	require.Equal(t, reporters.RecordSuccess, env.Status)
	require.Nil(t, env.Message)
	require.Equal(t, "Feature", env.Record.Type)
	require.Equal(t, "019e6318-...", env.Record.ID)
	require.JSONEq(t, `{"type":"Polygon","coordinates":[]}`, string(env.Record.Geometry))
	require.Equal(t, map[string]any{"CODE": "305", "NAME": "Berat"}, env.Record.Properties)
	require.Equal(t, json.Number("17999118217.71"), env.Record.Stats["area"], "numbers keep their exact text")
	require.Equal(t, "ALBL1_01", env.Record.System[reporters.SystemAssetID])
	require.Contains(t, env.Record.System, reporters.SystemDeletedAt)

	// What was decoded encodes back to the same document.
	back, err := json.Marshal(env)
	require.NoError(t, err)
	require.JSONEq(t, string(raw), string(back))
}

func TestValidateEnvelopeAcceptsWhatConstructorsBuild(t *testing.T) {
	t.Parallel()
	envs := append(reportertest.Envelopes(20),
		reporters.Success(reporters.Record{Type: "Feature"}),
		reporters.Rejected(nil, nil, "empty input"),
		reporters.Success(reporters.Record{Type: "Feature", Geometry: json.RawMessage(
			`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]}]}`)}),
	)
	for _, env := range envs {
		raw, err := json.Marshal(env)
		require.NoError(t, err)
		got, err := reporters.ValidateEnvelope(raw)
		require.NoError(t, err, "%s", raw)
		reportertest.RequireSameEnvelopes(t, []reporters.Envelope{env}, []reporters.Envelope{got})
	}
}

func TestValidateEnvelopeRejects(t *testing.T) {
	t.Parallel()
	const rec = `"record":{"type":"Feature","properties":{},"stats":{},"system":{}}`
	for name, tc := range map[string]struct {
		raw  string
		want []string // substrings of the error, in order of appearance
	}{
		"NotJSON":          {raw: `hello`, want: []string{"not valid JSON"}},
		"NotAnObject":      {raw: `[1]`, want: []string{`at "": expected object, but got array`}},
		"TwoValues":        {raw: `{"status":"SUCCESS",` + rec + `} {}`, want: []string{"one JSON object per line"}},
		"MissingStatus":    {raw: `{` + rec + `}`, want: []string{`at "": missing properties: 'status'`}},
		"BadStatus":        {raw: `{"status":"OK",` + rec + `}`, want: []string{`at "/status": value must be one of "SUCCESS", "REJECTED", "FAILED"`}},
		"UnknownTopField":  {raw: `{"status":"SUCCESS","bogus":1,` + rec + `}`, want: []string{`at "": additionalProperties 'bogus' not allowed`}},
		"MessageNotString": {raw: `{"status":"FAILED","message":3,` + rec + `}`, want: []string{`at "/message": expected string or null, but got number`}},
		"MissingRecord":    {raw: `{"status":"SUCCESS"}`, want: []string{`at "": missing properties: 'record'`}},
		"NullStats": {
			raw:  `{"status":"SUCCESS","record":{"type":"Feature","properties":{},"stats":null,"system":{}}}`,
			want: []string{`at "/record/stats": expected object, but got null`},
		},
		"MissingSystem": {
			raw:  `{"status":"SUCCESS","record":{"type":"Feature","properties":{},"stats":{}}}`,
			want: []string{`at "/record": missing properties: 'system'`},
		},
		"NestedStats": {
			raw:  `{"status":"SUCCESS","record":{"type":"Feature","properties":{},"stats":{"cells":{"h3":"x"}},"system":{}}}`,
			want: []string{`at "/record/stats/cells": expected string or number or boolean or null or array, but got object`},
		},
		"UnknownRecordField": {
			raw:  `{"status":"SUCCESS","record":{"typo":1,"type":"Feature","properties":{},"stats":{},"system":{}}}`,
			want: []string{`at "/record": additionalProperties 'typo' not allowed`},
		},
		"BadGeometryType": {
			raw:  `{"status":"SUCCESS","record":{"type":"Feature","geometry":{"type":"Circle","coordinates":[]},"properties":{},"stats":{},"system":{}}}`,
			want: []string{`at "/record/geometry/type": value must be one of`},
		},
		"GeometryWithoutCoordinates": {
			raw:  `{"status":"SUCCESS","record":{"type":"Feature","geometry":{"type":"Point"},"properties":{},"stats":{},"system":{}}}`,
			want: []string{`at "/record/geometry": missing properties: 'coordinates'`},
		},
		"BadTransactionTime": {
			raw:  `{"status":"SUCCESS","record":{"type":"Feature","properties":{},"stats":{},"system":{"transaction_time":"yesterday"}}}`,
			want: []string{`at "/record/system/transaction_time": 'yesterday' is not valid 'date-time'`},
		},
		"SeveralProblems": {
			raw:  `{"status":"MAYBE","record":{"type":"","properties":[],"stats":{},"system":{"geoid":1}}}`,
			want: []string{`at "/record/properties": expected object, but got array`, `at "/record/system/geoid": expected string, but got number`, `at "/record/type": length must be >= 1`, `at "/status": value must be one of`},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := reporters.ValidateEnvelope([]byte(tc.raw))
			require.Error(t, err)
			msg := err.Error()
			at := 0
			for _, w := range tc.want {
				i := strings.Index(msg[at:], w)
				require.GreaterOrEqual(t, i, 0, "%q not in %q (after offset %d)", w, msg, at)
				at += i + len(w)
			}
		})
	}
}

func TestValidateEnvelopeProblems(t *testing.T) {
	t.Parallel()
	_, err := reporters.ValidateEnvelope([]byte(`{"status":"SUCCESS","record":{"type":"Feature","properties":{},"stats":[],"system":{}}}`))
	var ee *reporters.EnvelopeError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, []reporters.Problem{{Pointer: "/record/stats", Message: "expected object, but got array"}}, ee.Problems)
}
