package cli

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// useColor decides --color: always, never, or auto (a terminal, and
// NO_COLOR unset).
func useColor(mode string, w io.Writer) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		return isTerminal(w) && os.Getenv("NO_COLOR") == "", nil
	}
	return false, fmt.Errorf("unknown --color %q: want auto, always or never", mode)
}

// clearScreen moves the cursor home and clears the screen, for a frame
// that replaces the last one.
const clearScreen = "\x1b[H\x1b[2J"
