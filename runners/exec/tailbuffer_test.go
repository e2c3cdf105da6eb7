package exec

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{1, 7, 64, 4096} {
		rng := rand.New(rand.NewPCG(uint64(limit), 42))
		b := newTailBuffer(limit)
		var all []byte
		for i := range 500 {
			p := make([]byte, rng.IntN(3*limit+2))
			for j := range p {
				p[j] = byte('a' + (i+j)%26)
			}
			n, err := b.Write(p)
			require.NoError(t, err)
			require.Equal(t, len(p), n)
			all = append(all, p...)
			want := all[max(0, len(all)-limit):]
			require.True(t, bytes.Equal(want, b.Bytes()), "limit %d after write %d", limit, i)
			require.Equal(t, len(all) > limit, b.Truncated())
			require.LessOrEqual(t, cap(b.buf), 2*limit+64, "memory stays bounded")
		}
	}
}
