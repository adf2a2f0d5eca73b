package fs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
	"github.com/google/go-cmp/cmp"
)

// envelope builds the expected read text.
func envelope(path, body string) string {
	return "<path>" + path + "</path>\n<type>file</type>\n<content>\n" + body + "\n</content>"
}

func TestReadEnvelopeAndValue(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("a.txt", "one\ntwo\nthree\n")
	res := e.call("read", `{"file_path":"a.txt"}`)
	mustOK(t, res)
	p := e.path("a.txt")
	if got, want := text(t, res), envelope(p, "1: one\n2: two\n3: three\n\n(End of file - total 3 lines)"); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
	var out ReadOutput
	if err := jsonv.Decode(res.Value, &out); err != nil {
		t.Fatal(err)
	}
	want := ReadOutput{Path: p, Offset: 1, Lines: []Line{{1, "one"}, {2, "two"}, {3, "three"}}, TotalLines: 3}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("value (-want +got):\n%s", diff)
	}
}

func TestReadEmptyFile(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("empty.txt", "")
	res := e.call("read", `{"file_path":"empty.txt"}`)
	mustOK(t, res)
	b, _ := jsonv.Marshal(res.Value)
	if want := fmt.Sprintf(`{"path":%q,"offset":1,"lines":[],"totalLines":0}`, e.path("empty.txt")); string(b) != want {
		t.Errorf("value = %s, want %s", b, want)
	}
	if got, want := text(t, res), envelope(e.path("empty.txt"), "(End of file - total 0 lines)"); got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	// Past the end of an empty file is out of range; line 1 is not.
	wantErr(t, e.call("read", `{"file_path":"empty.txt","offset":2}`), CodeNotFound,
		fmt.Sprintf(`offset 2 is out of range for %q (0 lines)`, e.path("empty.txt")))
}

func TestReadWindows(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("five.txt", "l1\nl2\nl3\nl4\nl5\n")
	p := e.path("five.txt")
	tests := []struct {
		args string
		body string
	}{
		{`"offset":2,"limit":2`, "2: l2\n3: l3\n\n(Showing lines 2-3 of 5. Use offset=4 to continue.)"},
		{`"limit":1`, "1: l1\n\n(Showing lines 1-1 of 5. Use offset=2 to continue.)"},
		{`"offset":4`, "4: l4\n5: l5\n\n(End of file - total 5 lines)"},
		{`"offset":5,"limit":2000`, "5: l5\n\n(End of file - total 5 lines)"},
		{`"offset":3,"limit":3`, "3: l3\n4: l4\n5: l5\n\n(End of file - total 5 lines)"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			res := e.call("read", `{"file_path":"five.txt",`+tt.args+`}`)
			mustOK(t, res)
			if got, want := text(t, res), envelope(p, tt.body); got != want {
				t.Errorf("text:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestReadOffsetOutOfRange(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("three.txt", "a\nb\nc")
	p := e.path("three.txt")
	for _, off := range []string{"4", "100", "1e21"} {
		want := off
		if off == "1e21" {
			want = "1e+21" // shown as JavaScript prints the number
		}
		wantErr(t, e.call("read", `{"file_path":"three.txt","offset":`+off+`}`), CodeNotFound,
			fmt.Sprintf(`offset %s is out of range for %q (3 lines)`, want, p))
	}
	mustOK(t, e.call("read", `{"file_path":"three.txt","offset":3}`))
}

func TestReadArgumentErrors(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("a.txt", "x\n")
	tests := []struct {
		args, code, msg string
	}{
		{`{"file_path":""}`, "", "file_path must be a non-empty string"},
		{`{"file_path":" \t\n"}`, "", "file_path must be a non-empty string"},
		{`{"file_path":"a.txt","offset":0}`, "", "offset must be a positive integer"},
		{`{"file_path":"a.txt","offset":-3}`, "", "offset must be a positive integer"},
		{`{"file_path":"a.txt","offset":1.5}`, "", "offset must be a positive integer"},
		{`{"file_path":"a.txt","limit":0}`, "", "limit must be a positive integer"},
		{`{"file_path":"a.txt","limit":2.5}`, "", "limit must be a positive integer"},
		{`{"file_path":"a.txt","limit":2001}`, "", "limit must be less than or equal to 2000"},
		{`{"file_path":"a.txt","offset":"2"}`, tool.CodeInvalidArgs, `invalid arguments: "offset" must be a number`},
		{`{"offset":1}`, tool.CodeInvalidArgs, `invalid arguments: missing required property "file_path"`},
		{`{"file_path":7}`, tool.CodeInvalidArgs, `"file_path" must be a string`},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			res := e.call("read", tt.args)
			wantErr(t, res, tt.code, tt.msg)
			if tt.code == "" && res.Error.Message != tt.msg {
				t.Errorf("message = %q, want exactly %q", res.Error.Message, tt.msg)
			}
		})
	}
}

func TestReadConfiguredCaps(t *testing.T) {
	t.Run("ReadLimit", func(t *testing.T) {
		e := newEnv(t, Config{ReadLimit: 2})
		e.put("four.txt", "1\n2\n3\n4\n")
		res := e.call("read", `{"file_path":"four.txt"}`)
		mustOK(t, res)
		if !strings.HasSuffix(text(t, res), "(Showing lines 1-2 of 4. Use offset=3 to continue.)\n</content>") {
			t.Errorf("text = %q", text(t, res))
		}
		wantErr(t, e.call("read", `{"file_path":"four.txt","limit":3}`), "", "limit must be less than or equal to 2")
		b, _ := jsonv.Marshal(e.tools.Read().Parameters)
		if !strings.Contains(string(b), "Defaults to 2,") {
			t.Errorf("the read schema does not name the configured limit: %s", b)
		}
	})
	t.Run("ReadMaxLineLength", func(t *testing.T) {
		e := newEnv(t, Config{ReadMaxLineLength: 4})
		e.put("long.txt", "abcdefgh\nabcd\nabcde\r\n")
		res := e.call("read", `{"file_path":"long.txt"}`)
		mustOK(t, res)
		want := envelope(e.path("long.txt"), "1: abcd... (line truncated to 4 chars)\n2: abcd\n3: abcd... (line truncated to 4 chars)\n\n(End of file - total 3 lines)")
		if got := text(t, res); got != want {
			t.Errorf("text:\n%q\nwant:\n%q", got, want)
		}
	})
	t.Run("ReadMaxBytes", func(t *testing.T) {
		e := newEnv(t, Config{ReadMaxBytes: 10})
		e.put("bytes.txt", "aaaa\nbbbb\ncccc\n") // 4 + 1+4 = 9 bytes fit, 1+4 more do not
		res := e.call("read", `{"file_path":"bytes.txt"}`)
		mustOK(t, res)
		want := envelope(e.path("bytes.txt"), "1: aaaa\n2: bbbb\n\n(Output capped. Showing lines 1-2. Use offset=3 to continue.)")
		if got := text(t, res); got != want {
			t.Errorf("text:\n%q\nwant:\n%q", got, want)
		}
		// A first line larger than the cap leaves the window empty; offset past EOF is not
		// reported when the cap cut the window.
		e.put("wide.txt", strings.Repeat("w", 20)+"\nx\n")
		res = e.call("read", `{"file_path":"wide.txt","offset":1}`)
		mustOK(t, res)
		if got, want := text(t, res), envelope(e.path("wide.txt"), "(Output capped. Showing lines 1-0. Use offset=1 to continue.)"); got != want {
			t.Errorf("text = %q, want %q", got, want)
		}
	})
}

func TestReadLineEndingsAndBOM(t *testing.T) {
	e := newEnv(t, Config{})
	tests := []struct {
		name, data string
		lines      []Line
	}{
		{"crlf", "a\r\nb\r\n", []Line{{1, "a"}, {2, "b"}}},
		{"no final newline", "a\nb", []Line{{1, "a"}, {2, "b"}}},
		{"blank last line", "a\n\n", []Line{{1, "a"}, {2, ""}}},
		{"lone cr kept inside", "a\rb\n", []Line{{1, "a\rb"}}},
		{"bom dropped", "\uFEFFhead\nx\n", []Line{{1, "head"}, {2, "x"}}},
		{"only bom", "\uFEFF", []Line{}},
		{"only newline", "\n", []Line{{1, ""}}},
		{"multibyte", "héllo wörld 😀\n", []Line{{1, "héllo wörld 😀"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.put("f.txt", tt.data)
			res := e.call("read", `{"file_path":"f.txt"}`)
			mustOK(t, res)
			var out ReadOutput
			if err := jsonv.Decode(res.Value, &out); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.lines, out.Lines); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if out.TotalLines != len(tt.lines) {
				t.Errorf("totalLines = %d, want %d", out.TotalLines, len(tt.lines))
			}
		})
	}
}

func TestLineText(t *testing.T) {
	const sfx = "... (line truncated to 4 chars)"
	tests := []struct {
		line string
		max  int
		want string
	}{
		{"abcd", 4, "abcd"},
		{"abcde", 4, "abcd" + sfx},
		{"abcd\r", 4, "abcd"},      // a CR just past the limit is the line ending
		{"abc\rdefg", 3, "abc"},    // the reference drops a CR at unit max+1 even mid-line
		{"ab\r", 4, "ab"},          // CRLF ending
		{"a\rb", 4, "a\rb"},        // lone CR inside
		{"ééééé", 4, "éééé" + sfx}, // code units, not bytes
		{"😀😀😀", 4, "😀😀" + sfx},     // a surrogate pair counts two units
		{"a😀😀", 4, "a😀" + sfx},     // a pair straddling the cut is left out entirely
		{"😀😀", 4, "😀😀"},            // exactly max units
		{"a😀😀b", 4, "a😀" + sfx},    // pair at units 4-5 exceeds max+1
		{"", 4, ""},
		{"\r", 1, ""},
	}
	for _, tt := range tests {
		if got := lineText([]byte(tt.line), tt.max); got != tt.want {
			t.Errorf("lineText(%q, %d) = %q, want %q", tt.line, tt.max, got, tt.want)
		}
	}
}

func TestReadMissingRecordsAbsence(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.path("nope.txt")
	wantErr(t, e.call("read", `{"file_path":"nope.txt"}`), CodeNotFound, fmt.Sprintf(`cannot read %q: not found`, p))
	// An observed absence: edit says not found (not "read first"), write may create.
	res := e.call("edit", `{"file_path":"nope.txt","old_string":"a","new_string":"b"}`)
	wantErr(t, res, CodeNotFound)
	if want := fmt.Sprintf(`cannot edit %q: not found`, p); res.Error.Message != want {
		t.Errorf("message = %q, want %q", res.Error.Message, want)
	}
	mustOK(t, e.call("write", `{"file_path":"nope.txt","content":"new"}`))
	// A missing parent directory is a miss too.
	wantErr(t, e.call("read", `{"file_path":"no/such/dir.txt"}`), CodeNotFound, "not found")
}

func TestReadNotRegular(t *testing.T) {
	e := newEnv(t, Config{})
	if err := os.Mkdir(e.path("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.call("read", `{"file_path":"dir"}`), CodeNotRegularFile, fmt.Sprintf(`cannot read %q: not a regular file`, e.path("dir")))
	wantErr(t, e.call("read", `{"file_path":"."}`), CodeNotRegularFile)
	if runtime.GOOS != "windows" {
		// A FIFO without a writer would block an ordinary open forever.
		if err := syscall.Mkfifo(e.path("fifo"), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		wantErr(t, e.call("read", `{"file_path":"fifo"}`), CodeNotRegularFile, "not a regular file")
	}
}

func TestReadText(t *testing.T) {
	e := newEnv(t, Config{})
	tests := []struct {
		name string
		data []byte
		msg  string // "" for success
	}{
		{"nul at start", []byte("\x00abc"), "binary file"},
		{"nul at 8191", append([]byte(strings.Repeat("a", 8191)), 0), "binary file"},
		{"nul at 8192 is text", append([]byte(strings.Repeat("a", 8192)), 0, '\n'), ""},
		{"invalid utf-8", []byte("ok\n\xff\xfe\n"), "invalid UTF-8 text"},
		{"truncated sequence at end", []byte("ok\n\xe2\x82"), "invalid UTF-8 text"},
		{"surrogate encoded", []byte("\xed\xa0\x80\n"), "invalid UTF-8 text"},
		{"overlong", []byte("\xc0\xaf\n"), "invalid UTF-8 text"},
		{"nul wins over earlier invalid utf-8", append([]byte("\xff"+strings.Repeat("a", 5000)), 0), "binary file"},
		{"invalid utf-8 late in a big file", append([]byte(strings.Repeat("line\n", 20000)), 0xff), "invalid UTF-8 text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(e.path("f.bin"), tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			res := e.call("read", `{"file_path":"f.bin","limit":1}`)
			if tt.msg == "" {
				mustOK(t, res)
				return
			}
			wantErr(t, res, CodeNotText, fmt.Sprintf(`cannot read %q: %s`, e.path("f.bin"), tt.msg))
		})
	}
}

// TestReadStreamsSparseFiles reads sparse files far larger than what a read may hold in
// memory: the allocation total of the call stays a small fraction of the file size.
func TestReadStreamsSparseFiles(t *testing.T) {
	e := newEnv(t, Config{})
	measure := func(args string) (*tool.Result, uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res := e.call("read", args)
		runtime.ReadMemStats(&after)
		return res, after.TotalAlloc - before.TotalAlloc
	}

	// 1 GiB of zeros: binary, found in the first chunk.
	f, err := os.Create(e.path("huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res, alloc := measure(`{"file_path":"huge.bin"}`)
	wantErr(t, res, CodeNotText, "binary file")
	if alloc > 8<<20 {
		t.Errorf("reading a 1 GiB file allocated %d bytes", alloc)
	}

	// A text head followed by a sparse tail must be scanned to the end for the line count.
	size := int64(64 << 20)
	if os.Getenv("DSH_FS_HUGE") != "" {
		size = 1 << 30 // minutes under -race on slow disks; opt in
	}
	e.put("big.txt", strings.Repeat("0123456789\n", 1000))
	if err := os.Truncate(e.path("big.txt"), size); err != nil {
		t.Fatal(err)
	}
	res, alloc = measure(`{"file_path":"big.txt","offset":999,"limit":3}`)
	mustOK(t, res)
	if !strings.Contains(text(t, res), "999: 0123456789\n1000: 0123456789\n1001: ") ||
		!strings.HasSuffix(text(t, res), "(End of file - total 1001 lines)\n</content>") {
		t.Errorf("text = %.300q", text(t, res))
	}
	if alloc > 16<<20 {
		t.Errorf("reading a %d-byte file allocated %d bytes", size, alloc)
	}
}

// TestReadStreamingMatchesWholeRead reads the same files in one piece and streamed.
func TestReadStreamingMatchesWholeRead(t *testing.T) {
	whole := newEnv(t, Config{})
	stream := newEnv(t, Config{ReadStreamMinSize: 1})
	files := map[string]string{
		"mixed.txt": strings.Repeat("αβγ line\r\n", 30000) + "tail",
		"one.txt":   strings.Repeat("x", 3<<20),
		"bom.txt":   "\uFEFF" + strings.Repeat("row\n", 70000),
	}
	for name, data := range files {
		for _, args := range []string{`"offset":1`, `"offset":29999,"limit":5`, `"limit":7`} {
			whole.put(name, data)
			stream.put(name, data)
			a := whole.call("read", `{"file_path":"`+name+`",`+args+`}`)
			b := stream.call("read", `{"file_path":"`+name+`",`+args+`}`)
			if a.IsError != b.IsError {
				t.Fatalf("%s %s: whole error %v, streamed error %v", name, args, a.Error, b.Error)
			}
			if a.IsError {
				if a.Error.Message[strings.Index(a.Error.Message, "(")-1:] != b.Error.Message[strings.Index(b.Error.Message, "(")-1:] {
					t.Errorf("%s %s: %q vs %q", name, args, a.Error.Message, b.Error.Message)
				}
				continue
			}
			ta := strings.Replace(text(t, a), whole.dir, "", 1)
			tb := strings.Replace(text(t, b), stream.dir, "", 1)
			if ta != tb {
				t.Errorf("%s %s: whole and streamed reads differ", name, args)
			}
		}
	}
}

func TestReadAbortsBetweenChunks(t *testing.T) {
	e := newEnv(t, Config{ReadStreamMinSize: 1})
	e.put("f.txt", strings.Repeat("x\n", 10))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	target, err := e.tools.ws.Resolve("read", "f.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = e.tools.readWindow(ctx, target, windowSpec{offset: 1, limit: 10, maxLineLength: 10, maxBytes: 100})
	var te *tool.Error
	if !errors.As(err, &te) || te.Code != CodeAborted || te.Message != "read aborted" {
		t.Fatalf("err = %v, want FS_ABORTED read aborted", err)
	}
}

func TestConcurrencyClasses(t *testing.T) {
	e := newEnv(t, Config{})
	for name, want := range map[string]tool.ExecMode{"read": tool.Parallel, "write": tool.Exclusive, "edit": tool.Exclusive} {
		args := tool.ParseArguments(`{"file_path":"a","content":"","old_string":"a","new_string":"b"}`)
		if got := e.reg.ExecutionMode(tool.Input{CallID: "x", Name: name, Args: args}); got != want {
			t.Errorf("%s: execution mode %v, want %v", name, got, want)
		}
	}
	// Invalid arguments make even read exclusive.
	if got := e.reg.ExecutionMode(tool.Input{CallID: "x", Name: "read", Args: tool.ParseArguments(`{}`)}); got != tool.Exclusive {
		t.Errorf("read with invalid arguments: %v, want exclusive", got)
	}
}

func TestReadMeta(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("src/main.GO", "package main\n")
	e.put("notes", "plain\n")
	res := e.call("read", `{"file_path":"src/main.GO"}`)
	mustOK(t, res)
	b, _ := jsonv.Marshal(res.Meta)
	if want := fmt.Sprintf(`{"path":%q,"offset":1,"lines":[{"number":1,"text":"package main"}],"totalLines":1,"lang":"go"}`, e.path("src/main.GO")); string(b) != want {
		t.Errorf("meta = %s\nwant   %s", b, want)
	}
	res = e.call("read", `{"file_path":"notes"}`)
	mustOK(t, res)
	b, _ = jsonv.Marshal(res.Meta)
	if want := fmt.Sprintf(`{"path":%q,"offset":1,"lines":[{"number":1,"text":"plain"}],"totalLines":1}`, e.path("notes")); string(b) != want {
		t.Errorf("meta = %s\nwant   %s", b, want)
	}
}
