package gcsreporter

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// spillWriteBuffer is the write buffer in front of a spill file.
const spillWriteBuffer = 256 << 10

// spillBuffer keeps what is written to it in memory up to limit bytes, then
// moves it to a temporary file and appends there: its memory never exceeds
// limit plus the file's write buffer. It is not safe for concurrent use.
type spillBuffer struct {
	limit int
	dir   string

	mem  []byte // the data while it fits in memory; capacity at most limit
	file *os.File
	name string // the file's name while it could not be removed yet
	bw   *bufio.Writer
	size int64
}

// newSpillBuffer returns an empty buffer that spills into dir past limit bytes.
func newSpillBuffer(limit int, dir string) *spillBuffer {
	return &spillBuffer{limit: limit, dir: dir}
}

// Write appends p, spilling to a file when memory would exceed the limit.
func (s *spillBuffer) Write(p []byte) (int, error) {
	if s.file == nil {
		if len(s.mem)+len(p) <= s.limit {
			if len(s.mem)+len(p) > cap(s.mem) {
				// Grow by doubling, but never past the limit.
				grown := make([]byte, len(s.mem), min(max(2*cap(s.mem), len(s.mem)+len(p), 64<<10), s.limit))
				copy(grown, s.mem)
				s.mem = grown
			}
			s.mem = append(s.mem, p...)
			s.size += int64(len(p))
			return len(p), nil
		}
		if err := s.spill(); err != nil {
			return 0, err
		}
	}
	n, err := s.bw.Write(p)
	s.size += int64(n)
	if err != nil {
		return n, fmt.Errorf("error writing to the report's temporary file: %w", err)
	}
	return n, nil
}

// spill moves the data to a new temporary file. The file is removed from
// its folder at once (where the system allows it), so that it disappears
// with the process even if Close is never called.
func (s *spillBuffer) spill() error {
	f, err := os.CreateTemp(s.dir, "wf-report-*.ndjson")
	if err != nil {
		return fmt.Errorf("error creating the report's temporary file: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		s.name = f.Name()
	}
	s.file = f
	s.bw = bufio.NewWriterSize(f, spillWriteBuffer)
	if _, err := s.bw.Write(s.mem); err != nil {
		return fmt.Errorf("error writing to the report's temporary file: %w", err)
	}
	s.mem = nil
	return nil
}

// Spilled reports whether the data has moved to a file.
func (s *spillBuffer) Spilled() bool { return s.file != nil }

// Size returns how many bytes were written.
func (s *spillBuffer) Size() int64 { return s.size }

// Reader flushes pending writes and returns a reader of everything written.
// It may be called again (a retried upload reads from the start).
func (s *spillBuffer) Reader() (io.Reader, error) {
	if s.file == nil {
		return bytes.NewReader(s.mem), nil
	}
	if err := s.bw.Flush(); err != nil {
		return nil, fmt.Errorf("error writing to the report's temporary file: %w", err)
	}
	return io.NewSectionReader(s.file, 0, s.size), nil
}

// Close releases the memory and closes and removes the file.
func (s *spillBuffer) Close() error {
	s.mem = nil
	if s.file == nil {
		return nil
	}
	err := s.file.Close()
	if s.name != "" {
		err = errors.Join(err, os.Remove(s.name))
	}
	s.file, s.bw = nil, nil
	if err != nil {
		return fmt.Errorf("error removing the report's temporary file: %w", err)
	}
	return nil
}
