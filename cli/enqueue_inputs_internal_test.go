package cli

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// TestInputsKeepJSONWithCommas: --input values are taken whole, so a JSON
// list or object with commas is one input (a slice flag split it at its
// commas and the list failed), and plain strings stay strings.
func TestInputsKeepJSONWithCommas(t *testing.T) {
	t.Parallel()
	var got map[string]any
	app := &cli.App{
		Name: "wf", Writer: io.Discard, ErrWriter: io.Discard,
		Commands: []*cli.Command{{
			Name:  "enqueue",
			Flags: inputFlags(),
			Action: func(c *cli.Context) error {
				raw, err := enqueueInputs(c)
				if err != nil {
					return err
				}
				return json.Unmarshal(raw, &got)
			},
		}},
	}
	require.NoError(t, app.Run([]string{"wf", "enqueue",
		"--input", `tags=["a","b"]`, "--input", `opts={"x":1,"y":[2,3]}`, "--input", "note=a, b", "--input", "n=3"}))
	require.Equal(t, map[string]any{
		"tags": []any{"a", "b"},
		"opts": map[string]any{"x": float64(1), "y": []any{float64(2), float64(3)}},
		"note": "a, b",
		"n":    float64(3),
	}, got)
}
