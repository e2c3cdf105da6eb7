package exec

import "sync"

// tailBuffer is an io.Writer that keeps only the last limit bytes written to
// it, in a ring that grows on demand up to limit: capturing a child's output
// costs at most limit bytes however much it prints. It is safe for
// concurrent use.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte // grows up to limit, then is overwritten circularly
	start int    // once full, the index of the oldest byte
	total int64  // bytes written in all
}

// newTailBuffer returns a buffer keeping the last limit bytes (limit > 0).
func newTailBuffer(limit int) *tailBuffer {
	return &tailBuffer{limit: limit}
}

// Write implements io.Writer; it never fails.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if n >= b.limit {
		b.buf = append(b.buf[:0], p[n-b.limit:]...)
		b.start = 0
		return n, nil
	}
	if room := b.limit - len(b.buf); room > 0 {
		take := min(room, len(p))
		b.buf = append(b.buf, p[:take]...)
		p = p[take:]
	}
	for len(p) > 0 {
		c := copy(b.buf[b.start:], p)
		p = p[c:]
		b.start = (b.start + c) % b.limit
	}
	return n, nil
}

// Bytes returns a copy of the kept bytes, oldest first.
func (b *tailBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]byte, 0, len(b.buf))
	out = append(out, b.buf[b.start:]...)
	return append(out, b.buf[:b.start]...)
}

// Truncated reports whether older bytes were dropped.
func (b *tailBuffer) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total > int64(len(b.buf))
}
