// Package lines writes a list one item a line, as wf's error lists (spec
// and configuration problems, invalid inputs) show it.
package lines

import (
	"fmt"
	"strings"
)

// Join returns line of each item, one a line (no newline after the last).
func Join[T any](items []T, line func(T) string) string {
	out := make([]string, len(items))
	for i, item := range items {
		out[i] = line(item)
	}
	return strings.Join(out, "\n")
}

// Indented returns the String of each item, one a line, each indented by
// two spaces: the problems under a message that introduces them.
func Indented[T fmt.Stringer](items []T) string {
	return Join(items, func(item T) string { return "  " + item.String() })
}
