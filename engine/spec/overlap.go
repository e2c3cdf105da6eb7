package spec

import (
	"strings"
	"unicode/utf8"
)

// checkSubscriptionOverlaps reports two subscriptions that create the same
// task type for the same event with the same default dedup key
// (evt:{event_id}:{task_type}): the second task is always dropped as a
// duplicate of the first. Two subscriptions whose when conditions differ may
// be meant to share events out; they are left alone.
func (c *checker) checkSubscriptionOverlaps(subs []*Subscription) {
	for i, a := range subs {
		for _, b := range subs[i+1:] {
			if a.taskType != b.taskType || a.dedupKey.source != defaultSubscriptionDedupKey || b.dedupKey.source != defaultSubscriptionDedupKey {
				continue
			}
			if a.when != nil && b.when != nil && a.when.source != b.when.source {
				continue
			}
			if !patternsOverlap(a.eventType, b.eventType) {
				continue
			}
			first, second := a, b
			if compareLocations(b.source, a.source) < 0 {
				first, second = b, a
			}
			d := c.declarations[KindSubscription][second.name]
			c.fail(d, "/event_type", "an event matching both this pattern and %q of subscription %q (%s) creates task type %q twice with the same default dedup key evt:{event_id}:%s, so one of the two tasks is always dropped; give one subscription a dedup_key of its own, e.g. dedup_key: '\"evt:\" + event.event_id + \":%s\"', or merge the two",
				first.eventType, first.name, first.source, second.taskType.name, second.taskType.name, second.name)
		}
	}
}

// compareLocations orders locations by file, then line.
func compareLocations(a, b Location) int {
	if a.File != b.File {
		return strings.Compare(a.File, b.File)
	}
	return a.Line - b.Line
}

// patternsOverlap reports whether some event type matches both patterns
// (exact names or path.Match globs).
func patternsOverlap(a, b string) bool {
	pa, okA := globTokens(a)
	pb, okB := globTokens(b)
	if !okA || !okB {
		return false
	}
	// Search the product of the two patterns' automata: a state is how far
	// each pattern has got; a star may stay where it is.
	type state struct{ i, j int }
	seen := map[state]bool{}
	stack := []state{{0, 0}}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[s] {
			continue
		}
		seen[s] = true
		if s.i == len(pa) && s.j == len(pb) {
			return true
		}
		if s.i < len(pa) && pa[s.i].star {
			stack = append(stack, state{s.i + 1, s.j})
		}
		if s.j < len(pb) && pb[s.j].star {
			stack = append(stack, state{s.i, s.j + 1})
		}
		if s.i == len(pa) || s.j == len(pb) || !pa[s.i].meets(pb[s.j]) {
			continue
		}
		next := state{s.i + 1, s.j + 1}
		if pa[s.i].star {
			next.i = s.i
		}
		if pb[s.j].star {
			next.j = s.j
		}
		stack = append(stack, next)
	}
	return false
}

// globToken is one step of a glob: a star, or one character from a set.
type globToken struct {
	star   bool
	any    bool      // ? (or the characters a star takes)
	ranges [][2]rune // a literal is a range of one
	negate bool
}

// matches reports whether r is one of the token's characters (a star takes
// any but /).
func (t globToken) matches(r rune) bool {
	if t.star || t.any {
		return r != '/'
	}
	in := false
	for _, rg := range t.ranges {
		if rg[0] <= r && r <= rg[1] {
			in = true
		}
	}
	return in != t.negate
}

// meets reports whether some character is taken by both tokens: it tries
// the characters either names, their neighbours, and a few others.
func (t globToken) meets(u globToken) bool {
	candidates := []rune{'a', 'z', '0', '.', '_', '-', 'é'}
	for _, tok := range []globToken{t, u} {
		for _, rg := range tok.ranges {
			candidates = append(candidates, rg[0], rg[1], rg[0]-1, rg[1]+1)
		}
	}
	for _, r := range candidates {
		if t.matches(r) && u.matches(r) {
			return true
		}
	}
	return false
}

// globTokens splits a path.Match pattern into tokens; ok is false for a
// malformed one (reported elsewhere).
func globTokens(p string) (out []globToken, ok bool) {
	for i := 0; i < len(p); {
		switch p[i] {
		case '*':
			out = append(out, globToken{star: true})
			i++
		case '?':
			out = append(out, globToken{any: true})
			i++
		case '\\':
			if i+1 >= len(p) {
				return nil, false
			}
			r, size := utf8.DecodeRuneInString(p[i+1:])
			out = append(out, globToken{ranges: [][2]rune{{r, r}}})
			i += 1 + size
		case '[':
			tok, n, ok := globClass(p[i:])
			if !ok {
				return nil, false
			}
			out = append(out, tok)
			i += n
		default:
			r, size := utf8.DecodeRuneInString(p[i:])
			out = append(out, globToken{ranges: [][2]rune{{r, r}}})
			i += size
		}
	}
	return out, true
}

// globClass reads a [...] class at the start of p and its length.
func globClass(p string) (globToken, int, bool) {
	var tok globToken
	i := 1
	if i < len(p) && p[i] == '^' {
		tok.negate = true
		i++
	}
	readChar := func() (rune, bool) {
		if i < len(p) && p[i] == '\\' {
			i++
		}
		if i >= len(p) {
			return 0, false
		}
		r, size := utf8.DecodeRuneInString(p[i:])
		i += size
		return r, true
	}
	for first := true; i < len(p); first = false {
		if p[i] == ']' && !first {
			return tok, i + 1, true
		}
		lo, ok := readChar()
		if !ok {
			return tok, 0, false
		}
		hi := lo
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			i++
			if hi, ok = readChar(); !ok {
				return tok, 0, false
			}
		}
		tok.ranges = append(tok.ranges, [2]rune{lo, hi})
	}
	return tok, 0, false
}
