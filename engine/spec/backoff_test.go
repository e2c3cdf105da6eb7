package spec

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	seed := defaultBackoff()

	t.Run("NominalIsTwoToTheRetryCountSeconds", func(t *testing.T) {
		t.Parallel()
		for n, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second} {
			require.Equal(t, want, seed.Delay(n, 0.5), "retry %d", n)
		}
	})

	t.Run("JitterBounds", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, 7200*time.Millisecond, seed.Delay(3, 0))
		require.Equal(t, 8800*time.Millisecond, seed.Delay(3, 1))
		for _, rnd := range []float64{0.1, 0.3, 0.7, 0.99} {
			d := seed.Delay(3, rnd)
			require.GreaterOrEqual(t, d, 7200*time.Millisecond)
			require.LessOrEqual(t, d, 8800*time.Millisecond)
		}
	})

	t.Run("CappedAtMaxEvenWithJitter", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, time.Hour, seed.Delay(12, 0.5))
		require.Equal(t, time.Hour, seed.Delay(12, 1))
		require.Equal(t, 54*time.Minute, seed.Delay(12, 0))
	})

	t.Run("NoOverflow", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, time.Hour, seed.Delay(math.MaxInt, 0.5))
		require.Equal(t, time.Hour, Backoff{Base: 24 * time.Hour, Factor: 10, Max: time.Hour}.Delay(1000, 0.5))
	})

	t.Run("OutOfRangeArguments", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, time.Second, seed.Delay(-5, 0.5))
		require.Equal(t, seed.Delay(0, 0), seed.Delay(0, -3))
		require.Equal(t, seed.Delay(0, 1), seed.Delay(0, 42))
	})

	t.Run("ConstantWithFactorOne", func(t *testing.T) {
		t.Parallel()
		b := Backoff{Base: 30 * time.Second, Factor: 1, Max: time.Hour}
		require.Equal(t, 30*time.Second, b.Delay(0, 0.9))
		require.Equal(t, 30*time.Second, b.Delay(50, 0.1))
	})

	t.Run("FromSpec", func(t *testing.T) {
		t.Parallel()
		tt := taskType(t, `
kind: TaskType
name: t
handler: {builtin: noop}
backoff: {base: 10s, factor: 3, max: 5m, jitter: 0}
`, "t")
		b := tt.Backoff()
		require.Equal(t, Backoff{Base: 10 * time.Second, Factor: 3, Max: 5 * time.Minute}, b)
		require.Equal(t, 90*time.Second, b.Delay(2, 0.123))
		require.Equal(t, 270*time.Second, b.Delay(3, 0.9))
		require.Equal(t, 5*time.Minute, b.Delay(4, 0.9))
	})
}
