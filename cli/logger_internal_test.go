package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/config"
)

// TestLogsReadable: in JSON logs a duration is text and a nil list is an
// empty list, not 20000000000 and null; the text format agrees.
func TestLogsReadable(t *testing.T) {
	t.Parallel()
	for format, want := range map[string][]string{
		config.LogFormatJSON: {`"grace":"20s"`, `"dropped":[]`, `"tables":["a"]`},
		config.LogFormatText: {`grace=20s`, `dropped=[]`, `tables=[a]`},
	} {
		var out bytes.Buffer
		log := newLogger(&config.Config{LogFormat: format, LogLevel: "info"}, &out)
		log.Info("shutting down", "grace", 20*time.Second, "dropped", []string(nil), "tables", []string{"a"})
		for _, w := range want {
			require.Contains(t, out.String(), w, format)
		}
	}
}
