//go:build race

package quickjs

// raceEnabled: under the race detector, ThreadSanitizer maps its shadow memory lazily and
// fails under RLIMIT_DATA, so a race-instrumented worker does not limit its data segment.
const raceEnabled = true
