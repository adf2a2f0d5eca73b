package session

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestEncodeSegment(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"abc-DEF_1.2", "abc-DEF_1.2"},
		{".", "~002E"},
		{"..", "~002E~002E"},
		{"...", "..."},
		{"a/b", "a~002Fb"},
		{"../etc", "..~002Fetc"},
		{"~", "~007E"},
		{"a b", "a~0020b"},
		{"é", "~00E9"},
		{"日本", "~65E5~672C"},
		{"😀", "~D83D~DE00"}, // one code point, two UTF-16 code units
		{"a\x00b", "a~0000b"},
		{`C:\x`, "C~003A~005Cx"},
		{"20261129T140501Z-3f9a2c", "20261129T140501Z-3f9a2c"},
	}
	for _, tt := range tests {
		got, err := EncodeSegment(tt.in)
		if err != nil {
			t.Errorf("EncodeSegment(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("EncodeSegment(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{"", "a\xffb"} {
		if got, err := EncodeSegment(bad); err == nil {
			t.Errorf("EncodeSegment(%q) = %q, want an error", bad, got)
		}
	}
}

func TestEncodeSegmentInjective(t *testing.T) {
	seen := map[string]string{}
	for _, s := range []string{".", "..", "~002E", "~", "~007E", "a~", "a~007E", "a.", "a/", "a\\", "/", "-", "_", "😀", "\uFFFD"} {
		enc, err := EncodeSegment(s)
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[enc]; dup {
			t.Errorf("EncodeSegment(%q) = EncodeSegment(%q) = %q", s, prev, enc)
		}
		seen[enc] = s
		if enc == "." || enc == ".." || strings.ContainsAny(enc, `/\`) {
			t.Errorf("EncodeSegment(%q) = %q is not a safe segment", s, enc)
		}
	}
}

func TestProjectKey(t *testing.T) {
	long := "/" + strings.Repeat("a", 300)
	tests := []struct {
		in, want string
	}{
		{"/home/user/project", "--home-user-project--"},
		{"/home//user///project/", "--home-user-project---"},
		{"/", "--root--"},
		{"///", "--root--"},
		{"-leading", "--leading--"},
		{"/-x", "--x--"},
		{`C:\Users\me`, "--C-Users-me--"},
		{"/a:b", "--a-b--"},
		{"/home/~me", "--home-~007Eme--"},
		{"/srv/café", "--srv-caf~00E9--"},
		{"/tmp/日本", "--tmp-~65E5~672C--"},
		{"/x/😀", "--x-~D83D~DE00--"},
		{"/a b/..", "--a~0020b-..--"},
		{"relative/dir", "--relative-dir--"},
		{long, "--" + strings.Repeat("a", 251) + "--"},
	}
	for _, tt := range tests {
		got, err := ProjectKey(tt.in)
		if err != nil {
			t.Errorf("ProjectKey(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ProjectKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if len(got) > 255 {
			t.Errorf("ProjectKey(%q) is %d bytes long", tt.in, len(got))
		}
	}
	if _, err := ProjectKey(""); err == nil {
		t.Error("ProjectKey(\"\") succeeded, want an error")
	}
	// Truncation may cut an escape; the key stays bounded.
	got, _ := ProjectKey("/" + strings.Repeat("é", 100))
	if len(got) != 255 {
		t.Errorf("ProjectKey of a long escaped path has %d bytes, want 255", len(got))
	}
}

func TestLogPath(t *testing.T) {
	tests := []struct {
		cwd, id string
		c       Compression
		want    string
	}{
		{"/w/p", "s1", CompressionZstd, "/r/--w-p--/s1/session.jsonl.zstd"},
		{"/w/p", "s1", CompressionNone, "/r/--w-p--/s1/session.jsonl"},
		{"", "s1", CompressionZstd, "/r/_no-cwd/s1/session.jsonl.zstd"},
		{"", "..", CompressionZstd, "/r/_no-cwd/~002E~002E/session.jsonl.zstd"},
		{"", "../../etc/passwd", CompressionNone, "/r/_no-cwd/..~002F..~002Fetc~002Fpasswd/session.jsonl"},
	}
	for _, tt := range tests {
		got, err := LogPath("/r", tt.cwd, tt.id, tt.c)
		if err != nil {
			t.Errorf("LogPath(%q, %q): %v", tt.cwd, tt.id, err)
			continue
		}
		if got != filepath.FromSlash(tt.want) {
			t.Errorf("LogPath(%q, %q, %s) = %q, want %q", tt.cwd, tt.id, tt.c, got, tt.want)
		}
	}
	if _, err := LogPath("/r", "", "", CompressionZstd); err == nil {
		t.Error("LogPath with an empty id succeeded")
	}
}

func TestNewID(t *testing.T) {
	at := time.Date(2026, 11, 29, 14, 5, 1, 0, time.FixedZone("X", 3600))
	id := NewID(at)
	if !regexp.MustCompile(`^20261129T130501Z-[0-9a-f]{8}$`).MatchString(id) {
		t.Errorf("NewID = %q, want 20261129T130501Z-xxxxxxxx (UTC)", id)
	}
	if other := NewID(at); other == id {
		t.Errorf("two NewID calls returned %q", id)
	}
	if later := NewID(at.Add(time.Second)); later <= id {
		t.Errorf("NewID does not sort by time: %q <= %q", later, id)
	}
	if seg, _ := EncodeSegment(id); seg != id {
		t.Errorf("NewID %q needs escaping as a path segment: %q", id, seg)
	}
}

func TestNewMessageID(t *testing.T) {
	id := NewMessageID()
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("NewMessageID = %q, want a version-4 UUID", id)
	}
}

func TestDefaultRoot(t *testing.T) {
	t.Setenv("DSH_HOME", "/opt/dsh")
	got, err := DefaultRoot()
	if err != nil || got != filepath.FromSlash("/opt/dsh/sessions") {
		t.Errorf("DefaultRoot with DSH_HOME = %q, %v", got, err)
	}
	t.Setenv("DSH_HOME", "")
	t.Setenv("HOME", "/home/u")
	got, err = DefaultRoot()
	if err != nil || got != filepath.FromSlash("/home/u/.dsh/sessions") {
		t.Errorf("DefaultRoot without DSH_HOME = %q, %v", got, err)
	}
}
