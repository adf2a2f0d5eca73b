package quickjs

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

func TestDecodeWorkerFrame(t *testing.T) {
	tests := []struct {
		line string
		want *inbound // nil = junk
	}{
		{`{"type":"log","text":"hi"}`, &inbound{kind: frameLog, text: "hi"}},
		{`{"type":"log","text":"a\u0000b","extra":[1]}`, &inbound{kind: frameLog, text: "a\x00b"}},
		{`{"type":"call","id":3,"global":"tools","name":"x","args":{"a":[1]}}`, &inbound{kind: frameCall, id: 3, global: "tools", name: "x", args: []byte(`{"a":[1]}`)}},
		{`{"type":"call","id":9007199254740991,"global":"g","name":"n","args":null}`, &inbound{kind: frameCall, id: 9007199254740991, global: "g", name: "n", args: []byte(`null`)}},
		{`{"type":"call","id":0,"global":"g","name":"n","args":"\ud800"}`, &inbound{kind: frameCall, global: "g", name: "n", args: []byte(`"\ud800"`)}},
		{`{"type":"idle","id":7}`, &inbound{kind: frameIdle, id: 7}},
		{`{"type":"idle","id":0}`, &inbound{kind: frameIdle}},
		{`{ "id": 7, "type": "idle" }`, &inbound{kind: frameIdle, id: 7}},
		{`{"type":"idle","id":9007199254740991}`, &inbound{kind: frameIdle, id: 9007199254740991}},
		{`{"type":"output-limit"}`, &inbound{kind: frameOutputLimit}},
		{`{"type":"budget"}`, &inbound{kind: frameBudget}},
		{`{"type":"oom"}`, &inbound{kind: frameOOM}},
		{`{"type":"exit","code":7}`, &inbound{kind: frameExit, code: 7}},
		{`{"type":"exit","code":-2147483648}`, &inbound{kind: frameExit, code: -2147483648}},
		{`{"type":"done"}`, &inbound{kind: frameDone}},
		{`{"type":"done","value":null}`, &inbound{kind: frameDone, value: []byte(`null`)}},
		{`{"type":"done","value":"\ud800"}`, &inbound{kind: frameDone, value: []byte(`"\ud800"`)}},
		{`{"type":"done","error":{"kind":"exception","message":"m"}}`, &inbound{kind: frameDone, errKind: "exception", errMsg: "m"}},
		{`{"type":"done","value":1,"error":{"kind":"invalid-output","message":"m"}}`, &inbound{kind: frameDone, errKind: "invalid-output", errMsg: "m"}},
		{`{"type":"done","error":{"kind":"output-limit","message":""}}`, &inbound{kind: frameDone, errKind: "output-limit"}},
		// Junk.
		{``, nil}, {`null`, nil}, {`[]`, nil}, {`"log"`, nil}, {`{}`, nil}, {`{"type":"nope"}`, nil},
		{`{"type":"log"}`, nil}, {`{"type":"log","text":null}`, nil}, {`{"type":"log","text":1}`, nil},
		{`{"type":"log","text":"\ud800"}`, nil}, {"{\"type\":\"log\",\"text\":\"\xff\"}", nil},
		{`{"type":"log","text":"a","text":"b"}`, nil}, {`{"type":"log","text":"a"} trailing`, nil},
		{`{"TYPE":"log","text":"a"}`, nil},
		{`{"type":"call","global":"g","name":"n","args":{}}`, nil},
		{`{"type":"call","id":-1,"global":"g","name":"n","args":{}}`, nil},
		{`{"type":"call","id":1.5,"global":"g","name":"n","args":{}}`, nil},
		{`{"type":"call","id":9007199254740992,"global":"g","name":"n","args":{}}`, nil},
		{`{"type":"call","id":"1","global":"g","name":"n","args":{}}`, nil},
		{`{"type":"call","id":1,"name":"n","args":{}}`, nil},
		{`{"type":"call","id":1,"global":"g","name":false,"args":{}}`, nil},
		{`{"type":"done","error":null}`, nil},
		{`{"type":"idle"}`, nil}, {`{"type":"idle","id":"7"}`, nil}, {`{"type":"idle","id":-1}`, nil},
		{`{"type":"idle","id":1.5}`, nil}, {`{"type":"idle","id":9007199254740992}`, nil},
		{`{"type":"idle","id":null}`, nil}, {`{"type":"idle","id":7} x`, nil}, {`{"type":"idle","id":07}`, nil},
		{`{"type":"exit"}`, nil}, {`{"type":"exit","code":"7"}`, nil}, {`{"type":"exit","code":1.5}`, nil},
		{`{"type":"exit","code":2147483648}`, nil}, {`{"type":"exit","code":1e3}`, nil},
		{`{"type":"done","error":{"kind":"timeout","message":"m"}}`, nil},
		{`{"type":"done","error":{"kind":"exception"}}`, nil},
		{`{"type":"done","error":{"kind":"exception","message":7}}`, nil},
	}
	for _, tt := range tests {
		got, ok := decodeWorkerFrame([]byte(tt.line))
		if tt.want == nil {
			if ok {
				t.Errorf("decode(%s) = %+v, want junk", tt.line, got)
			}
			continue
		}
		if !ok {
			t.Errorf("decode(%s) = junk", tt.line)
			continue
		}
		if diff := cmp.Diff(*tt.want, got, cmp.AllowUnexported(inbound{}), cmp.Comparer(func(a, b []byte) bool { return bytes.Equal(a, b) })); diff != "" {
			t.Errorf("decode(%s) (-want +got):\n%s", tt.line, diff)
		}
	}
}

func FuzzDecodeWorkerFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"log","text":"hi"}`, `{"type":"call","id":3,"global":"tools","name":"x","args":{}}`,
		`{"type":"done","value":[1,{"a":null}]}`, `{"type":"done","error":{"kind":"exception","message":"m"}}`,
		`{"type":"output-limit"}`, `{"type":"budget"}`, `{"type":"oom"}`, `{"type":"exit","code":3}`, `null`, "\xff", `{"type":"done","value":-0}`,
		`{"type":"idle","id":12}`, `{"type":"idle","id":"12"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := decodeWorkerFrame(line)
		if !ok {
			return
		}
		switch got.kind {
		case frameLog, frameOutputLimit, frameBudget, frameOOM:
		case frameExit:
			if got.code < math.MinInt32 || got.code > math.MaxInt32 {
				t.Fatalf("exit code %d out of range", got.code)
			}
		case frameCall, frameIdle:
			if got.id < 0 || got.id > maxCallID {
				t.Fatalf("call id %d out of range", got.id)
			}
		case frameDone:
			switch got.errKind {
			case "", "exception", "invalid-output", "output-limit":
			default:
				t.Fatalf("done error kind %q", got.errKind)
			}
		default:
			t.Fatalf("kind %d", got.kind)
		}
	})
}

func TestFrameReader(t *testing.T) {
	input := "a\n\n" + strings.Repeat("b", 100) + "\nlast"
	fr := newFrameReader(strings.NewReader(input), 100)
	var got []string
	for {
		line, err := fr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	if diff := cmp.Diff([]string{"a", "", strings.Repeat("b", 100), "last"}, got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	fr = newFrameReader(strings.NewReader("ok\n"+strings.Repeat("x", 101)+"\n"), 100)
	if line, err := fr.next(); err != nil || string(line) != "ok" {
		t.Fatalf("next = %q, %v", line, err)
	}
	if _, err := fr.next(); !errors.Is(err, errFrameTooLarge) {
		t.Fatalf("oversized frame: %v", err)
	}
	// Frames longer than the reader's buffer are reassembled.
	long := strings.Repeat("y", 200<<10)
	fr = newFrameReader(strings.NewReader(long+"\nz\n"), 1<<20)
	if line, err := fr.next(); err != nil || string(line) != long {
		t.Fatalf("long frame: %d bytes, %v", len(line), err)
	}
	if line, err := fr.next(); err != nil || string(line) != "z" {
		t.Fatalf("after long frame: %q, %v", line, err)
	}
}

func TestFrameReaderProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		frames := rapid.SliceOf(rapid.StringMatching(`[^\n]{0,300}`)).Draw(t, "frames")
		max := rapid.IntRange(1, 400).Draw(t, "max")
		var input strings.Builder
		for _, f := range frames {
			input.WriteString(f + "\n")
		}
		fr := newFrameReader(strings.NewReader(input.String()), max)
		for i, want := range frames {
			line, err := fr.next()
			if len(want) > max {
				if !errors.Is(err, errFrameTooLarge) {
					t.Fatalf("frame %d of %d bytes over %d: %v", i, len(want), max, err)
				}
				return
			}
			if err != nil || string(line) != want {
				t.Fatalf("frame %d = %q, %v; want %q", i, line, err, want)
			}
		}
		if _, err := fr.next(); err != io.EOF {
			t.Fatalf("after the frames: %v", err)
		}
	})
}

func FuzzFrameReader(f *testing.F) {
	f.Add([]byte("a\nb\n"), 10)
	f.Add([]byte("\n\n\n"), 1)
	f.Add([]byte(strings.Repeat("x", 5000)), 100)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		fr := newFrameReader(bytes.NewReader(data), max)
		total := 0
		for {
			line, err := fr.next()
			if err != nil {
				return
			}
			if len(line) > max {
				t.Fatalf("frame of %d bytes over %d", len(line), max)
			}
			if bytes.IndexByte(line, '\n') >= 0 {
				t.Fatal("frame contains a newline")
			}
			total += len(line) + 1
			if total > len(data)+1 {
				t.Fatal("read more than the input")
			}
		}
	})
}
