package spec

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// encodeDecode is what toJSONValue did for every value before genericJSON:
// encode v, decode the JSON with UseNumber.
func encodeDecode(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	require.NoError(t, dec.Decode(&out))
	return out
}

// inputsCorpus are inputs texts whose numbers json.Marshal writes otherwise
// than given (exponents at both cut-offs, -0, integers past 2^53, the
// smallest and largest floats, digits past float64's), with strings that it
// escapes.
var inputsCorpus = []string{
	`{}`, `[]`, `null`, `"x"`, `true`, `1`,
	`{"n": 1.0, "m": 1e2, "k": 1E-7, "z": -0, "w": -0.0, "a": [0.000001, 0.0000001, 1e20, 1e21, 123456789012345678901234567890]}`,
	`{"big": 9007199254740993, "tiny": 5e-324, "max": 1.7976931348623157e308, "pi": 3.14159265358979323846264338327950288}`,
	`{"s": "<a href=\"x\">&amp;</a>\u2028\u0000é\ud83d\ude00", "nested": {"list": [{"x": null}, [], {}, [1, "2", false]]}}`,
	`{"": 0, "key with spaces": -1.5e-10, "ünï": 12.50}`,
	`{"bad": "\udc00 lone surrogate"}`,
}

// TestToJSONValueIsEncodeDecode: for inputs as json.Unmarshal decodes them,
// the walk gives exactly what encoding and decoding gave, numbers' text
// included (a violation's message quotes it).
func TestToJSONValueIsEncodeDecode(t *testing.T) {
	for _, text := range inputsCorpus {
		var v any
		require.NoError(t, json.Unmarshal([]byte(text), &v), text)
		got, err := toJSONValue(v)
		require.NoError(t, err, text)
		require.Equal(t, encodeDecode(t, v), got, text)
		_, walked := genericJSON(v)
		require.True(t, walked, "%s was encoded, not walked", text)
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1e-6, math.Nextafter(1e-6, 0), 1e21, math.Nextafter(1e21, 0), -1e21,
		1e-7, 1.5e-9, 123e-20, math.MaxFloat64, math.SmallestNonzeroFloat64, 1 << 53, 0.1 + 0.2} {
		got, err := toJSONValue(map[string]any{"f": f})
		require.NoError(t, err)
		require.Equal(t, encodeDecode(t, map[string]any{"f": f}), got, "%v", f)
	}
}

// TestToJSONValueEncodesTheRest: what the walk does not know is encoded,
// as before: other types, a string json.Marshal changes, a float it
// refuses.
func TestToJSONValueEncodesTheRest(t *testing.T) {
	type point struct {
		X int `json:"x"`
	}
	for _, v := range []any{
		map[string]any{"p": point{X: 1}},
		map[string]any{"n": 3},
		[]string{"a"},
		map[string]any{"s": "\xff invalid"},
		map[string]any{"\xff": 1.0},
		json.Number("12"),
	} {
		_, walked := genericJSON(v)
		require.False(t, walked, "%#v", v)
		got, err := toJSONValue(v)
		require.NoError(t, err)
		require.Equal(t, encodeDecode(t, v), got, "%#v", v)
	}
	_, err := toJSONValue(map[string]any{"f": math.Inf(1)})
	require.ErrorContains(t, err, "error encoding inputs as JSON")
	_, err = toJSONValue([]any{math.NaN()})
	require.ErrorContains(t, err, "error encoding inputs as JSON")
}

// FuzzToJSONValue: for any JSON text, the walk of its decoded value is what
// encoding and decoding it gives.
func FuzzToJSONValue(f *testing.F) {
	for _, text := range inputsCorpus {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var v any
		if json.Unmarshal([]byte(text), &v) != nil {
			return
		}
		got, err := toJSONValue(v)
		require.NoError(t, err)
		require.Equal(t, encodeDecode(t, v), got)
	})
}

// BenchmarkValidateDecodedInputs checks inputs as the client decodes them
// (json.Unmarshal into an any) against a task type's JSON Schema, once per
// enqueued task with inputs of its own: through the walk (toJSONValue
// today) and through encoding and decoding them (as before).
func BenchmarkValidateDecodedInputs(b *testing.B) {
	tt, _ := benchSet(b).TaskType("ingest")
	var inputs any
	if err := json.Unmarshal([]byte(`{"path": "gs://bucket/a/b/c.parquet", "n": 3}`), &inputs); err != nil {
		b.Fatal(err)
	}
	b.Run("walk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := tt.ValidateInputs(inputs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := validateAgainst(tt.inputs, tt.inputsDoc, encodeDecode(b, inputs)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
