//go:build unix

package term

import (
	"os"

	"golang.org/x/sys/unix"
)

// termWidth asks the terminal f for its column count; 0 when it cannot say.
func termWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
