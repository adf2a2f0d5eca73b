package quickjs

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json"
)

// genericReply is the reply decoder scanReply stands in for.
func genericReply(line []byte) (hostFrame, bool) {
	var f hostFrame
	if json.Unmarshal(line, &f) != nil || f.Type != "reply" {
		return hostFrame{}, false
	}
	return f, true
}

// TestScanReply pins which frames take the fast path and what it decodes; everything it
// refuses still decodes through decodeReply as before.
func TestScanReply(t *testing.T) {
	tests := []struct {
		line string
		fast bool // scanReply takes it
		ok   bool // decodeReply accepts it
		id   int64
		val  string
	}{
		{`{"type":"reply","id":1,"ok":true,"value":2}`, true, true, 1, `2`},
		{`{"type":"reply","id":0,"ok":true,"value":null}`, true, true, 0, `null`},
		{`{"type":"reply","id":123456789012345,"ok":true,"value":{"a":[1,"x\n",true]}}`, true, true, 123456789012345, `{"a":[1,"x\n",true]}`},
		{`{"type":"reply","id":7,"ok":true,"value":"}"}`, true, true, 7, `"}"`},
		// Refused by the fast path, decoded generically.
		{`{"type":"reply","id":3,"ok":false,"message":"boom"}`, false, true, 3, ``},
		{`{"type":"reply", "id":1,"ok":true,"value":2}`, false, true, 1, `2`},
		{`{"id":1,"type":"reply","ok":true,"value":2}`, false, true, 1, `2`},
		{`{"type":"reply","id":1.0,"ok":true,"value":2}`, false, false, 0, ``},
		{`{"type":"reply","id":1234567890123456,"ok":true,"value":2}`, false, true, 1234567890123456, `2`},
		// Refused by both.
		{`{"type":"reply","id":01,"ok":true,"value":2}`, false, false, 0, ``},
		{`{"type":"reply","id":-1,"ok":true,"value":2}`, false, true, -1, `2`},
		{`{"type":"reply","id":1,"ok":true,"value":}`, false, false, 0, ``},
		{`{"type":"reply","id":1,"ok":true,"value":2},"x":1}`, false, false, 0, ``},
		{`{"type":"reply","id":1,"ok":true,"value":{"a":1,"a":2}}`, false, false, 0, ``},
		{"{\"type\":\"reply\",\"id\":1,\"ok\":true,\"value\":\"\xff\"}", false, false, 0, ``},
		{`{"type":"reply","id":1,"ok":true,"value":2`, false, false, 0, ``},
		{`{"type":"reply","id":,"ok":true,"value":2}`, false, false, 0, ``},
		{`{"type":"call","id":1,"ok":true,"value":2}`, false, false, 0, ``},
		{``, false, false, 0, ``},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			_, fast := scanReply([]byte(tc.line))
			if fast != tc.fast {
				t.Errorf("scanReply took it: %v, want %v", fast, tc.fast)
			}
			f, ok := decodeReply([]byte(tc.line))
			if ok != tc.ok {
				t.Fatalf("decodeReply ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if f.ID != tc.id || string(f.Value) != tc.val {
				t.Errorf("decodeReply = id %d value %s, want id %d value %s", f.ID, f.Value, tc.id, tc.val)
			}
		})
	}
}

// TestScanReplyDoesNotAlias checks that the decoded value survives the reuse of the line's
// buffer (the frame reader reuses it for the next frame).
func TestScanReplyDoesNotAlias(t *testing.T) {
	line := []byte(`{"type":"reply","id":1,"ok":true,"value":[1,2]}`)
	f, ok := scanReply(line)
	if !ok {
		t.Fatal("scanReply refused a reply")
	}
	for i := range line {
		line[i] = 'x'
	}
	if string(f.Value) != `[1,2]` {
		t.Fatalf("value = %s after the line was overwritten", f.Value)
	}
}

// FuzzScanReply checks that wherever the fast path takes a line, the generic decoder
// decodes it, and to the same frame.
func FuzzScanReply(f *testing.F) {
	f.Add([]byte(`{"type":"reply","id":1,"ok":true,"value":2}`))
	f.Add([]byte(`{"type":"reply","id":42,"ok":true,"value":{"a":[1,"b",null]}}`))
	f.Add([]byte(`{"type":"reply","id":3,"ok":false,"message":"boom"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		fast, ok := scanReply(line)
		if !ok {
			return
		}
		slow, ok := genericReply(line)
		if !ok {
			t.Fatalf("scanReply took %q, which the generic decoder refuses", line)
		}
		if fast.Type != slow.Type || fast.ID != slow.ID || fast.OK != slow.OK || fast.Message != slow.Message ||
			!bytes.Equal(bytes.TrimSpace(fast.Value), bytes.TrimSpace(slow.Value)) {
			t.Fatalf("scanReply(%q) = %+v, generic decoder %+v", line, fast, slow)
		}
	})
}

// BenchmarkDecodeReply is the worker's decode of a successful reply frame, fast path and
// generic decoder.
func BenchmarkDecodeReply(b *testing.B) {
	benchDecoders(b, []byte(`{"type":"reply","id":123,"ok":true,"value":{"n":124,"s":"echo"}}`),
		[]namedDecoder[hostFrame]{{"scan", scanReply}, {"generic", genericReply}},
		func(hostFrame) bool { return true })
}

// namedDecoder is one frame decoder a decode benchmark runs.
type namedDecoder[F any] struct {
	name string
	dec  func([]byte) (F, bool)
}

// benchDecoders runs each decoder over line as a sub-benchmark of its name, failing when it
// refuses the line or when valid reports the frame it decoded wrong.
func benchDecoders[F any](b *testing.B, line []byte, decs []namedDecoder[F], valid func(F) bool) {
	for _, c := range decs {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if f, ok := c.dec(line); !ok || !valid(f) {
					b.Fatalf("%s refused %s", c.name, line)
				}
			}
		})
	}
}

// TestScanCall pins which call frames the host's fast path takes; everything else still
// goes through the generic decoder, with its answer.
func TestScanCall(t *testing.T) {
	tests := []struct {
		line string
		fast bool // scanCall takes it
		ok   bool // decodeWorkerFrame accepts it
	}{
		{`{"type":"call","id":1,"global":"tools","name":"echo","args":{"text":"x"}}`, true, true},
		{`{"type":"call","id":0,"global":"","name":"","args":null}`, true, true},
		{`{"type":"call","id":9007199254740991,"global":"t","name":"ü","args":[1,"}"]}`, true, true},
		{`{"type":"call","id":9007199254740992,"global":"t","name":"n","args":1}`, false, false},
		{`{"type":"call","id":1.0,"global":"t","name":"n","args":1}`, false, true},
		{`{"type":"call","id":1,"global":"t\u0041","name":"n","args":1}`, false, true},
		{`{"type":"call","id":1,"global":"t","name":"n","args":"\ud800"}`, false, true},
		{"{\"type\":\"call\",\"id\":1,\"global\":\"\xff\",\"name\":\"n\",\"args\":1}", false, true},
		{`{"type":"call","id":1, "global":"t","name":"n","args":1}`, false, true},
		{`{"type":"call","id":01,"global":"t","name":"n","args":1}`, false, false},
		{`{"type":"call","id":-1,"global":"t","name":"n","args":1}`, false, false},
		{`{"type":"call","id":1,"global":"t","name":"n","args":}`, false, false},
		{`{"type":"call","id":1,"global":"t","name":"n","args":1},"global":"u"}`, false, false},
		{`{"type":"call","id":1,"global":"t","name":"n","args":{"a":1,"a":2}}`, false, false},
		{`{"type":"call","id":1,"global":"t","name":"n","args":1`, false, false},
		{"{\"type\":\"call\",\"id\":1,\"global\":\"a\tb\",\"name\":\"n\",\"args\":1}", false, false},
		{`{"type":"call","id":1,"global":"t","name":"n"}`, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			fast, took := scanCall([]byte(tc.line))
			if took != tc.fast {
				t.Errorf("scanCall took it: %v, want %v", took, tc.fast)
			}
			got, ok := decodeWorkerFrame([]byte(tc.line))
			if ok != tc.ok {
				t.Fatalf("decodeWorkerFrame ok = %v, want %v (%+v)", ok, tc.ok, got)
			}
			if took && (got.id != fast.id || got.global != fast.global || got.name != fast.name || !bytes.Equal(got.args, fast.args)) {
				t.Fatalf("decodeWorkerFrame = %+v, scanCall %+v", got, fast)
			}
		})
	}
}

// FuzzScanCall checks that wherever the host's fast path takes a worker line (which is
// hostile), the generic decoder takes it too, to the same frame.
func FuzzScanCall(f *testing.F) {
	f.Add([]byte(`{"type":"call","id":1,"global":"tools","name":"echo","args":{"text":"x"}}`))
	f.Add([]byte(`{"type":"call","id":12,"global":"a","name":"b","args":[1,{"c":null}]}`))
	f.Add([]byte(`{"type":"call","id":1,"global":"t","name":"n","args":1},"global":"u"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		fast, ok := scanCall(line)
		if !ok {
			return
		}
		slow, ok := decodeGeneric(line)
		if !ok {
			t.Fatalf("scanCall took %q, which the generic decoder refuses", line)
		}
		if fast.kind != slow.kind || fast.id != slow.id || fast.global != slow.global || fast.name != slow.name ||
			!bytes.Equal(bytes.TrimSpace(fast.args), bytes.TrimSpace(slow.args)) {
			t.Fatalf("scanCall(%q) = %+v, generic decoder %+v", line, fast, slow)
		}
	})
}

// FuzzScanIdle checks that whatever idle frame the fast path accepts, the generic decoder
// decodes to the same frame, and that isIdleFor agrees with both.
func FuzzScanIdle(f *testing.F) {
	f.Add([]byte(`{"type":"idle","id":1}`), int64(1))
	f.Add([]byte(`{"type":"idle","id":9007199254740991}`), int64(9007199254740991))
	f.Add([]byte(`{"type":"idle","id":12}`), int64(2))
	f.Add([]byte(`{"type":"idle","id":00}`), int64(0))
	f.Fuzz(func(t *testing.T, line []byte, id int64) {
		fast, ok := scanIdle(line)
		if isIdleFor(line, id) != (ok && fast.id == id) {
			t.Fatalf("isIdleFor(%q, %d) disagrees with scanIdle %+v %v", line, id, fast, ok)
		}
		if !ok {
			return
		}
		slow, ok := decodeGeneric(line)
		if !ok || slow.kind != frameIdle || slow.id != fast.id {
			t.Fatalf("scanIdle(%q) = %+v, generic decoder %+v %v", line, fast, slow, ok)
		}
	})
}

// BenchmarkDecodeCall is the host's decode of a binding call frame, fast path and generic
// decoder.
func BenchmarkDecodeCall(b *testing.B) {
	benchDecoders(b, []byte(`{"type":"call","id":123,"global":"tools","name":"echo","args":{"text":"x"}}`),
		[]namedDecoder[inbound]{{"scan", scanCall}, {"generic", decodeGeneric}},
		func(inbound) bool { return true })
}

// BenchmarkDecodeIdle is the host's decode of an idle frame read on its own (one that came
// after its call was handed to a carrier), through the fast path and the generic decoder.
func BenchmarkDecodeIdle(b *testing.B) {
	benchDecoders(b, []byte(`{"type":"idle","id":123}`),
		[]namedDecoder[inbound]{{"scan", decodeWorkerFrame}, {"generic", decodeGeneric}},
		func(f inbound) bool { return f.kind == frameIdle && f.id == 123 })
}
