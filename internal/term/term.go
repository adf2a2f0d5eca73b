// Package term renders dsh's UI cards (package card) as text for a terminal or a pipe:
// coloured with ANSI escapes when the output is a terminal, plain otherwise.
//
// Cards show untrusted data — file contents, command output, a model's arguments — so every
// piece of it is sanitized before it is written: control characters (escape sequences,
// carriage returns, bells) are shown in caret notation and never reach the terminal as
// controls. The only escapes in a rendering are the renderer's own colours.
package term

import (
	"io"
	"os"
	"strconv"

	"github.com/mattn/go-isatty"
)

// IsTerminal reports whether w is a terminal (a character device that is a tty).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}

// ColorEnabled reports whether output to w should be coloured: w is a terminal, NO_COLOR is
// unset or empty (https://no-color.org), and TERM is not "dumb". getenv reads the
// environment (os.Getenv when nil).
func ColorEnabled(w io.Writer, getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" {
		return false
	}
	return IsTerminal(w)
}

// Width returns the column count of the terminal w, or 0 when w is not a terminal or its
// size is unknown. A positive COLUMNS in the environment (read with getenv, os.Getenv when
// nil) wins, as it does for most terminal programs.
func Width(w io.Writer, getenv func(string) string) int {
	if getenv == nil {
		getenv = os.Getenv
	}
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	f, ok := w.(*os.File)
	if !ok || f == nil || !IsTerminal(w) {
		return 0
	}
	return termWidth(f)
}

// For returns the renderer suited to w: colours and the terminal's width when w is a
// terminal (and colour is not switched off), plain and unbounded otherwise.
func For(w io.Writer, getenv func(string) string) Renderer {
	return Renderer{Color: ColorEnabled(w, getenv), Width: Width(w, getenv)}
}
