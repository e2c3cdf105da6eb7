package store

import (
	"encoding/binary"
	"io"
	"time"

	"github.com/google/uuid"
)

// copyTasksSQL starts copyTasks' COPY: the columns taskCopyReader writes, in
// its order, in PostgreSQL's binary format; the others take their defaults
// (status PENDING, counters 0, the rest NULL), as they do in insertTasksSQL.
const copyTasksSQL = `COPY tasks.tasks (task_id, "timestamp", schema_name, scope, execution_mode, task_type,
    dedup_key, inputs, priority, max_retries, run_after, traceparent)
FROM STDIN WITH (FORMAT binary)`

// taskCopyColumns is how many columns copyTasksSQL names.
const taskCopyColumns = 12

// copyChunk is about how many bytes taskCopyReader encodes at a time: the
// size of the CopyData messages pgconn sends, so a batch is never held
// encoded in memory whole.
const copyChunk = 64 << 10

// copyHeader opens PostgreSQL's binary COPY format: the signature, no
// flags, no header extension.
var copyHeader = []byte("PGCOPY\n\377\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// microsecondsToY2K is how many microseconds PostgreSQL's epoch
// (2000-01-01 UTC), from which a binary timestamptz counts, lies after
// Unix's.
const microsecondsToY2K = 946_684_800 * 1_000_000

// taskCopyReader is the data of copyTasksSQL: the tasks without a dedup key
// and those whose key was taken (won), encoded a chunk at a time as Read
// asks for it. It writes each column's binary form itself, as pgx's
// CopyFrom would after looking up the table's column types and a codec per
// value: uuid as its 16 bytes, timestamptz as microseconds since 2000, the
// varchar columns as their bytes, jsonb as its version byte and the JSON
// text, smallint and integer big-endian, NULL as length -1.
type taskCopyReader struct {
	tasks   []NewTask
	won     map[uuid.UUID]bool
	now     time.Time // the run_after of tasks that give none
	next    int       // index of the next task to look at
	buf     []byte    // encoded, not yet read: buf[off:]
	off     int
	started bool // the header is written
	done    bool // the trailer is written
}

// copies reports whether t is written: it has no dedup key, or it took its
// key.
func (r *taskCopyReader) copies(t *NewTask) bool { return t.DedupKey == "" || r.won[t.ID] }

// Read implements io.Reader.
func (r *taskCopyReader) Read(p []byte) (int, error) {
	for r.off == len(r.buf) {
		if r.done {
			return 0, io.EOF
		}
		r.fill()
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// fill encodes the next tasks, about copyChunk bytes of them, and the
// trailer after the last.
func (r *taskCopyReader) fill() {
	r.buf, r.off = r.buf[:0], 0
	if !r.started {
		r.buf = append(r.buf, copyHeader...)
		r.started = true
	}
	for len(r.buf) < copyChunk && r.next < len(r.tasks) {
		t := &r.tasks[r.next]
		r.next++
		if r.copies(t) {
			r.buf = appendTaskRow(r.buf, t, r.now)
		}
	}
	if r.next == len(r.tasks) {
		r.buf = binary.BigEndian.AppendUint16(r.buf, 0xffff) // the trailer: a field count of -1
		r.done = true
	}
}

// appendTaskRow appends t's row, in copyTasksSQL's columns, to buf.
func appendTaskRow(buf []byte, t *NewTask, now time.Time) []byte {
	buf = binary.BigEndian.AppendUint16(buf, taskCopyColumns)
	buf = appendField(buf, t.ID[:])
	buf = appendTimestamptz(buf, IDTime(t.ID))
	buf = appendText(buf, t.SchemaName)
	buf = appendText(buf, string(t.Scope))
	buf = appendText(buf, string(t.ExecutionMode))
	buf = appendText(buf, t.TaskType)
	buf = appendTextOrNull(buf, t.DedupKey)
	inputs := taskInputs(t)
	buf = binary.BigEndian.AppendUint32(buf, uint32(1+len(inputs)))
	buf = append(buf, 1) // jsonb's binary format, version 1: the JSON text follows
	buf = append(buf, inputs...)
	buf = binary.BigEndian.AppendUint32(buf, 2)
	buf = binary.BigEndian.AppendUint16(buf, uint16(int16(t.Priority)))
	buf = binary.BigEndian.AppendUint32(buf, 4)
	buf = binary.BigEndian.AppendUint32(buf, uint32(int32(t.MaxRetries)))
	buf = appendTimestamptz(buf, runAfterOr(t, now))
	return appendTextOrNull(buf, t.Traceparent)
}

// appendField appends one non-NULL field: its length, then its bytes.
func appendField(buf, b []byte) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
	return append(buf, b...)
}

// appendText appends a text or varchar field.
func appendText(buf []byte, s string) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
	return append(buf, s...)
}

// appendTextOrNull appends s, NULL when it is "".
func appendTextOrNull(buf []byte, s string) []byte {
	if s == "" {
		return binary.BigEndian.AppendUint32(buf, 0xffffffff) // length -1: NULL
	}
	return appendText(buf, s)
}

// appendTimestamptz appends a timestamptz field: microseconds since
// 2000-01-01 UTC, the nanoseconds below a microsecond dropped as pgx drops
// them.
func appendTimestamptz(buf []byte, t time.Time) []byte {
	us := t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - microsecondsToY2K
	buf = binary.BigEndian.AppendUint32(buf, 8)
	return binary.BigEndian.AppendUint64(buf, uint64(us))
}
