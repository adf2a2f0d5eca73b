package quickjs

import (
	"bytes"
	"strings"
	"testing"
)

// TestWarmUp checks the warm-up run a worker process makes before preparing the VM of its
// run: the built-in program completes with the expected frame, and every way a warm-up
// can go wrong is reported.
func TestWarmUp(t *testing.T) {
	frame := func(program string) []byte {
		return []byte(`{"type":"start","program":` + string(appendString(nil, program)) +
			`,"namespaces":[],"limits":{"computeMs":10000,"maxOutputBytes":65536,"maxHeapBytes":67108864,"maxFrameBytes":16777216}}`)
	}
	tests := []struct {
		name    string
		frame   []byte
		want    string
		wantErr string // "" for success
		frames  []string
	}{
		{name: "built-in program", frame: warmStartFrame, want: warmUpDone,
			frames: []string{`{"type":"log","text":"warm { n: 1, s: 'two', l: [ true, null ] }"}`, warmUpDone}},
		{name: "undefined completion", frame: frame("let x = 1"), want: `{"type":"done"}`,
			frames: []string{`{"type":"done"}`}},
		{name: "bad start frame", frame: []byte(`{"type":"start","program":`), want: warmUpDone,
			wantErr: "decode the warm-up start frame"},
		{name: "other completion", frame: frame("return 2"), want: warmUpDone,
			wantErr: "did not complete as expected", frames: []string{`{"type":"done","value":2}`}},
		{name: "throw", frame: frame("throw new Error('cold')"), want: warmUpDone,
			wantErr: "did not complete as expected"},
		{name: "never settles", frame: frame("await new Promise(() => {})"), want: warmUpDone,
			wantErr: "did not complete as expected"},
		{name: "syntax error", frame: frame("return ("), want: warmUpDone,
			wantErr: "did not complete as expected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := warmUp(&out, tt.frame, tt.want)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("warmUp: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("warmUp error = %v, want one containing %q", err, tt.wantErr)
			}
			if tt.frames != nil {
				if got, want := out.String(), strings.Join(tt.frames, "\n")+"\n"; got != want {
					t.Errorf("frames written:\n%s\nwant:\n%s", got, want)
				}
			}
		})
	}
}

// TestWarmUpLeavesRunFresh checks that what the warm-up program leaves in its VM is not in
// the VM of the run that follows it in the same process: a global the warm-up sets is
// undefined for the run.
func TestWarmUpLeavesRunFresh(t *testing.T) {
	var out bytes.Buffer
	set := []byte(`{"type":"start","program":"globalThis.leak = 7; Object.prototype.polluted = 1; return leak","namespaces":[],` +
		`"limits":{"computeMs":10000,"maxOutputBytes":65536,"maxHeapBytes":67108864,"maxFrameBytes":16777216}}`)
	if err := warmUp(&out, set, `{"type":"done","value":7}`); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	read := []byte(`{"type":"start","program":"return [typeof globalThis.leak, typeof ({}).polluted]","namespaces":[],` +
		`"limits":{"computeMs":10000,"maxOutputBytes":65536,"maxHeapBytes":67108864,"maxFrameBytes":16777216}}`)
	if err := warmUp(&out, read, `{"type":"done","value":["undefined","undefined"]}`); err != nil {
		t.Fatal(err)
	}
}
