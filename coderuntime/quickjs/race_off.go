//go:build !race

package quickjs

// raceEnabled reports whether the binary runs under the race detector.
const raceEnabled = false
