package spec

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompilerIsReusableConcurrently(t *testing.T) {
	t.Parallel()
	c, err := NewCompiler(testOptions())
	require.NoError(t, err)
	valid, err := os.ReadFile("testdata/valid/all_kinds.yaml")
	require.NoError(t, err)
	invalid, err := os.ReadFile("testdata/invalid/schedule_inputs.yaml")
	require.NoError(t, err)

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			// assert, not require: FailNow must not run outside the test goroutine.
			set, err := c.Compile([]Source{{Name: "v.yaml", Data: valid}})
			if assert.NoError(t, err) {
				assert.Len(t, set.TaskTypes(), 4)
			}
			_, err = c.Compile([]Source{{Name: "i.yaml", Data: invalid}})
			assert.Error(t, err)
		})
	}
	wg.Wait()
}
