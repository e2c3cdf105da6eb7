package reporters_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/wfhq/wf/reporters"
)

// FuzzValidateEnvelope checks the decoder of the records an exec handler's
// child process writes (one line each): no line makes it panic, and an
// envelope it accepts encodes to one it accepts again.
func FuzzValidateEnvelope(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "seed_envelope.json"))
	if err != nil {
		f.Fatal(err)
	}
	const rec = `"record":{"type":"Feature","properties":{},"stats":{},"system":{}}`
	for _, s := range []string{
		string(seed), `hello`, `[1]`, `{"status":"SUCCESS",` + rec + `} {}`, `{"status":"OK",` + rec + `}`,
		`{"status":"FAILED","message":"boom",` + rec + `}`,
		`{"status":"REJECTED","message":"bad","record":{"type":"Feature","id":"x","geometry":null,"properties":{"n":12345678901234567890,"s":"\u00e9"},"stats":{},"system":{"source_index":3,"deleted_at":null}}}`,
		`{"status":"SUCCESS","record":{"type":"Feature","geometry":{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]}]},"properties":{},"stats":{"area":1.5,"bbox":[0,0,1,1]},"system":{"transaction_time":"2026-02-26T18:09:04.131762+00:00"}}}`,
		`{"status":"SUCCESS","record":{"type":"Feature","properties":{},"stats":{"cells":{"h3":"x"}},"system":{}}}`,
		`{"status":"MAYBE","record":{"type":"","properties":[],"stats":{},"system":{"geoid":1}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		env, err := reporters.ValidateEnvelope(line)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: empty error", line)
			}
			return
		}
		raw, err := json.Marshal(env)
		if err != nil {
			t.Fatalf("%q: the accepted envelope does not encode: %v", line, err)
		}
		if _, err := reporters.ValidateEnvelope(raw); err != nil {
			t.Fatalf("%q: the accepted envelope encodes as %s, which is refused: %v", line, raw, err)
		}
	})
}
