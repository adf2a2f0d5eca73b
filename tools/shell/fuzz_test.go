package shell

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"pgregory.net/rapid"
)

// TestParseStatRoundTrip: whatever name a process gives itself (its comm may hold spaces,
// parentheses and digits, up to 15 bytes), the fields after it are read back exactly.
func TestParseStatRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		runes := rapid.OneOf(rapid.RuneFrom([]rune(" ()09Z\n")), rapid.RuneFrom(nil, unicode.Latin))
		comm := rapid.StringOfN(runes, 0, 15, 15).Draw(t, "comm")
		want := procEntry{
			pid:   rapid.IntRange(1, 1<<22).Draw(t, "pid"),
			ppid:  rapid.IntRange(0, 1<<22).Draw(t, "ppid"),
			pgrp:  rapid.IntRange(0, 1<<22).Draw(t, "pgrp"),
			state: rapid.SampledFrom([]byte("RSDZTtXI")).Draw(t, "state"),
		}
		line := fmt.Sprintf("%d (%s) %c %d %d 0 -1 4194560 100 0", want.pid, comm, want.state, want.ppid, want.pgrp)
		got, ok := parseStatFull([]byte(line))
		if !ok || got != want {
			t.Fatalf("parseStatFull(%q) = %+v, %v; want %+v", line, got, ok, want)
		}
		state, pgrp, ok := parseStat([]byte(line))
		if !ok || state != want.state || pgrp != fmt.Sprint(want.pgrp) {
			t.Fatalf("parseStat(%q) = %c %q %v", line, state, pgrp, ok)
		}
	})
}

// FuzzParseStat: a stat line a process can shape through its name never panics the parser,
// and what it accepts is a consistent entry.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("12 (sleep) S 5 12 12 0 -1"))
	f.Add([]byte("7 (a) b) (c) Z 1 3 3"))
	f.Add([]byte("1 () R 0 0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, ok := parseStatFull(data)
		if !ok {
			return
		}
		state, pgrp, ok2 := parseStat(data)
		if n, err := strconv.Atoi(pgrp); !ok2 || state != e.state || err != nil || n != e.pgrp {
			t.Fatalf("parseStat(%q) = %c %q %v, parseStatFull = %+v", data, state, pgrp, ok2, e)
		}
	})
}

// FuzzParseGitdir: a ".git" file from the workspace is untrusted; whatever it holds, the
// parser names an absolute, clean path or nothing.
func FuzzParseGitdir(f *testing.F) {
	f.Add([]byte("gitdir: /repo/.git/worktrees/x\n"))
	f.Add([]byte("gitdir: ../modules/sub\n"))
	f.Add([]byte("gitdir:\n"))
	f.Add([]byte("gitdir: a\x00b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := parseGitdir(data, "/work/ws")
		if got == "" {
			return
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got || strings.ContainsRune(got, 0) {
			t.Fatalf("parseGitdir(%q) = %q", data, got)
		}
	})
}
