//go:build !unix

package term

import "os"

// termWidth is unknown on this platform; COLUMNS still sets it.
func termWidth(*os.File) int { return 0 }
