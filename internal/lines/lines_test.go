package lines

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

type number int

func (n number) String() string { return "#" + strconv.Itoa(int(n)) }

func TestJoin(t *testing.T) {
	t.Parallel()
	require.Equal(t, "", Join([]int(nil), strconv.Itoa))
	require.Equal(t, "1", Join([]int{1}, strconv.Itoa))
	require.Equal(t, "1\n22\n3", Join([]int{1, 22, 3}, strconv.Itoa))
}

func TestIndented(t *testing.T) {
	t.Parallel()
	require.Equal(t, "", Indented([]number(nil)))
	require.Equal(t, "  #1\n  #2", Indented([]number{1, 2}))
}
