package cli

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// isTerminal reports whether w (under its safeWriter) is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := unwrap(w).(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// useColor decides --color: always, never, or auto (a terminal, and
// NO_COLOR unset). With colour, w lets the colours through.
func useColor(mode string, w io.Writer) (bool, error) {
	color := false
	switch mode {
	case "always":
		color = true
	case "never":
	case "auto", "":
		color = isTerminal(w) && os.Getenv("NO_COLOR") == ""
	default:
		return false, fmt.Errorf("unknown --color %q: want auto, always or never", mode)
	}
	if color {
		permit(w, sgrSequences...)
	}
	return color, nil
}

// clearScreen moves the cursor home and clears the screen, for a frame
// that replaces the last one.
const clearScreen = "\x1b[H\x1b[2J"
