package store

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/clock"
)

// NewID returns a new UUIDv7 and the time it carries (millisecond precision).
// Task and event rows use that time as their partition key, so the id alone
// locates a row's partition.
//
// In a test run on another date (clock.Offset, WF_TEST_NOW) the time is
// moved by that offset, as the database's now() is, and ids stay in the
// order they were made.
func NewID() (uuid.UUID, time.Time, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.Nil, time.Time{}, fmt.Errorf("error generating a UUIDv7: %w", err)
	}
	if d := clock.Offset(); d != 0 {
		var b [8]byte
		copy(b[2:], id[:6])
		ms := int64(binary.BigEndian.Uint64(b[:])) + d.Milliseconds()
		binary.BigEndian.PutUint64(b[:], uint64(ms))
		copy(id[:6], b[2:])
	}
	return id, IDTime(id), nil
}

// IDTime returns the time a UUIDv7 carries in its first 48 bits.
func IDTime(id uuid.UUID) time.Time {
	var b [8]byte
	copy(b[2:], id[:6])
	ms := int64(binary.BigEndian.Uint64(b[:]))
	return time.UnixMilli(ms).UTC()
}

// IsV7 reports whether id is a version 7 UUID (and so locates its partition).
func IsV7(id uuid.UUID) bool { return id.Version() == 7 }

// assignID gives *id a new UUIDv7 when it is nil and refuses an id that is
// not a UUIDv7 (it would locate no partition); doing names the work in the
// error.
func assignID(id *uuid.UUID, doing string) error {
	if *id == uuid.Nil {
		v, _, err := NewID()
		if err != nil {
			return err
		}
		*id = v
	}
	if !IsV7(*id) {
		return fmt.Errorf("error %s: id %s is not a UUIDv7", doing, *id)
	}
	return nil
}

// NewIDAt returns a UUIDv7 carrying time at (to the millisecond) with random
// remaining bits: for tests, benchmarks and back-dated rows.
func NewIDAt(at time.Time) (uuid.UUID, error) {
	id, err := uuid.NewRandom()
	if err != nil {
		return uuid.Nil, fmt.Errorf("error generating a UUIDv7: %w", err)
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(at.UnixMilli()))
	copy(id[:6], b[2:])
	id[6] = (id[6] & 0x0f) | 0x70 // version 7
	id[8] = (id[8] & 0x3f) | 0x80 // RFC 4122 variant
	return id, nil
}
