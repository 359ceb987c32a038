package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Everything a terminal acts on is escaped, in a form that keeps JSON
// valid; newlines, tabs and printable text, any script, pass; the
// command's own sequences pass only once allowed, and only exactly.
func TestSafeWriterEscapesWhatATerminalActsOn(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, ümlaut, 日本語, emoji 👍\ttab\n", "plain text, ümlaut, 日本語, emoji 👍\ttab\n"},
		{"clear\x1b[2J\x1b[Hhome\n", `clear\u001b[2J\u001b[Hhome` + "\n"},
		{"title\x1b]0;pwned\x07 bell\n", `title\u001b]0;pwned\u0007 bell` + "\n"},
		{"carriage\rreturn and backspace\b\n", `carriage\u000dreturn and backspace\u0008` + "\n"},
		{"del\x7f c1 csi \u009b31m nel\u0085\n", `del\u007f c1 csi \u009b31m nel\u0085` + "\n"},
		{"bidi \u202egnp.exe\u202c \u2066iso\u2069\n", `bidi \u202egnp.exe\u202c \u2066iso\u2069` + "\n"},
		{"not utf-8 \xff\xfe end\n", `not utf-8 \xff\xfe end` + "\n"},
		{"colour \x1b[31mred\x1b[0m\n", `colour \u001b[31mred\u001b[0m` + "\n"},
	} {
		var b bytes.Buffer
		w := newSafeWriter(&b)
		_, err := w.Write([]byte(c.in))
		require.NoError(t, err)
		assert.Equal(t, c.want, b.String(), "%q", c.in)
	}
	// Escapes written by \u are JSON's own: valid JSON stays valid.
	var b bytes.Buffer
	w := newSafeWriter(&b)
	require.NoError(t, writeJSON(w, map[string]string{"m": "a\u009bb\x7f"}))
	require.NoError(t, w.Flush())
	assert.JSONEq(t, `{"m": "a\u009bb\u007f"}`, b.String())
}

func TestSafeWriterLetsOnlyAllowedSequencesThrough(t *testing.T) {
	var b bytes.Buffer
	w := newSafeWriter(&b)
	w.allow(sgrSequences...)
	_, err := w.Write([]byte("\x1b[31mred\x1b[0m \x1b[8mhidden\x1b[0m \x1b[2J\n"))
	require.NoError(t, err)
	assert.Equal(t, "\x1b[31mred\x1b[0m \\u001b[8mhidden\x1b[0m \\u001b[2J\n", b.String())
	w.allow(clearScreenSequence)
	_, _ = w.Write([]byte(clearScreen + "frame\n"))
	assert.Contains(t, b.String(), clearScreen+"frame\n")
}

// A line, or a sequence, cut between two writes is escaped whole.
func TestSafeWriterHoldsLinesUntilComplete(t *testing.T) {
	var b bytes.Buffer
	w := newSafeWriter(&b)
	w.allow(sgrSequences...)
	_, _ = w.Write([]byte("a \x1b[3"))
	assert.Empty(t, b.String())
	_, _ = w.Write([]byte("1mred\xe6\x97"))
	_, _ = w.Write([]byte("\xa5\n tail"))
	assert.Equal(t, "a \x1b[31mred日\n", b.String())
	require.NoError(t, w.Flush())
	assert.Equal(t, "a \x1b[31mred日\n tail", b.String())
}
