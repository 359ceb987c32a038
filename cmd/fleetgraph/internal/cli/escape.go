package cli

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"
)

// safeWriter is what every command writes through: it escapes the bytes a
// terminal would act on, so that nothing an RGD, a file name or the hub's
// status holds can move the cursor, clear or retitle the screen, hide a
// line or rewrite a CI log. Control characters other than newline and tab
// (C0, DEL, C1), Unicode's bidirectional controls and bytes that are not
// UTF-8 are written as escapes (\u001b, \u202e, \xff): the \u form keeps
// JSON valid. The command's own escape sequences pass only where it
// allowed them (colour when --color is on, clearing the screen when
// --watch redraws a terminal), and only those exact sequences.
//
// It writes whole lines (a line is held until its newline, or until
// Flush), so that no sequence is cut in two between writes.
type safeWriter struct {
	w       io.Writer
	allowed [][]byte
	pending []byte
}

var _ io.Writer = &safeWriter{}

// Our own escape sequences: the colours of package status, and clearing
// the screen (terminal.go).
var (
	sgrSequences        = [][]byte{[]byte("\x1b[0m"), []byte("\x1b[1m"), []byte("\x1b[31m"), []byte("\x1b[32m"), []byte("\x1b[33m"), []byte("\x1b[39m")}
	clearScreenSequence = []byte(clearScreen)
)

func newSafeWriter(w io.Writer) *safeWriter { return &safeWriter{w: w} }

// allow lets the given sequences through from now on.
func (s *safeWriter) allow(seqs ...[]byte) { s.allowed = append(s.allowed, seqs...) }

// Write escapes and writes the complete lines of p, and holds the rest.
func (s *safeWriter) Write(p []byte) (int, error) {
	s.pending = append(s.pending, p...)
	end := bytes.LastIndexByte(s.pending, '\n')
	if end < 0 {
		return len(p), nil
	}
	if _, err := s.w.Write(s.escape(s.pending[:end+1])); err != nil {
		return 0, err
	}
	s.pending = append(s.pending[:0], s.pending[end+1:]...)
	return len(p), nil
}

// Flush writes what is held.
func (s *safeWriter) Flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	_, err := s.w.Write(s.escape(s.pending))
	s.pending = s.pending[:0]
	return err
}

// escape returns p with everything a terminal acts on escaped.
func (s *safeWriter) escape(p []byte) []byte {
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); {
		if seq := s.allowedAt(p[i:]); seq > 0 {
			out = append(out, p[i:i+seq]...)
			i += seq
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			out = fmt.Appendf(out, `\x%02x`, p[i])
		case r == '\n' || r == '\t':
			out = append(out, p[i])
		case isControl(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	return out
}

// allowedAt is the length of the allowed sequence p starts with, or 0.
func (s *safeWriter) allowedAt(p []byte) int {
	if len(p) == 0 || p[0] != 0x1b {
		return 0
	}
	for _, seq := range s.allowed {
		if bytes.HasPrefix(p, seq) {
			return len(seq)
		}
	}
	return 0
}

// isControl reports whether a terminal or a text renderer acts on r: C0
// and C1 controls, DEL, and the bidirectional formatting characters that
// reorder what is shown.
func isControl(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// permit lets w, if it is a safeWriter, pass the given sequences.
func permit(w io.Writer, seqs ...[]byte) {
	if s, ok := w.(*safeWriter); ok {
		s.allow(seqs...)
	}
}

// unwrap is the writer under a safeWriter.
func unwrap(w io.Writer) io.Writer {
	if s, ok := w.(*safeWriter); ok {
		return s.w
	}
	return w
}
