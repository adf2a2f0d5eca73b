package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
	"pgregory.net/rapid"
)

// exportOf returns what Export writes for id.
func exportOf(t testing.TB, st Store, id string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Export(context.Background(), st, id, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestExportImportFileToFile moves a session between file stores of both encodings and
// back: the same header, seqs, times and event bytes, and a second import is refused.
func TestExportImportFileToFile(t *testing.T) {
	ctx := context.Background()
	for _, from := range compressions {
		for _, to := range compressions {
			t.Run(string(from)+"-"+string(to), func(t *testing.T) {
				src, err := Open(t.TempDir(), Options{Compression: from, Now: fixedClock})
				if err != nil {
					t.Fatal(err)
				}
				createWith(t, src, "e1", "/w", append(turnEvents(1), ToolCall{Turn: 1, CallID: "c1", Name: "tool", Arguments: "{}"}.Event())...)
				data := exportOf(t, src, "e1")
				dst, err := Open(t.TempDir(), Options{Compression: to})
				if err != nil {
					t.Fatal(err)
				}
				h, err := Import(ctx, dst, bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				if h.ID != "e1" || h.Cwd != "/w" {
					t.Errorf("imported header %+v", h)
				}
				if got := exportOf(t, dst, "e1"); !bytes.Equal(got, data) {
					t.Errorf("export after import differs:\n%s\n---\n%s", got, data)
				}
				a, _ := src.Load(ctx, "e1")
				b, _ := dst.Load(ctx, "e1")
				if a.Recovered == 0 || a.Recovered != b.Recovered || len(a.Events) != len(b.Events) {
					t.Errorf("recovery differs: %d/%d events, %d/%d recovered", len(a.Events), len(b.Events), a.Recovered, b.Recovered)
				}
				if _, err := Import(ctx, dst, bytes.NewReader(data)); !errors.Is(err, ErrExists) {
					t.Errorf("second import = %v, want ErrExists", err)
				}
				// A store's own log file imports as well.
				third, err := Open(t.TempDir(), Options{})
				if err != nil {
					t.Fatal(err)
				}
				raw := sampleLog(t, from)
				if _, err := Import(ctx, third, bytes.NewReader(raw)); err != nil {
					t.Fatalf("import of a %s log file: %v", from, err)
				}
			})
		}
	}
}

func TestImportRefusesDamage(t *testing.T) {
	ctx := context.Background()
	st, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	good := sampleLog(t, CompressionNone)
	nl := bytes.IndexByte(good, '\n')
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty or header-less"},
		{"header only", good[:nl+1], "without events"},
		{"torn tail", good[:len(good)-4], "damaged or incomplete record"},
		{"torn zstd", func() []byte { z := sampleLog(t, CompressionZstd); return z[:len(z)-3] }(), "damaged or incomplete record"},
		{"bad header", append([]byte(`{"type":"session","version":9}`+"\n"), good[nl+1:]...), "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Import(ctx, st, bytes.NewReader(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Import = %v, want %q", err, tt.want)
			}
			if infos, _ := st.List(ctx); len(infos) != 0 {
				t.Errorf("a refused import left %d sessions", len(infos))
			}
		})
	}
}

// TestExportImportProperty: any log the agent could write survives Export and Import
// unchanged, whatever its batches.
func TestExportImportProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		dir := t.TempDir()
		src, err := Open(dir+"/a", Options{Compression: rapid.SampledFrom(compressions).Draw(rt, "from")})
		if err != nil {
			rt.Fatal(err)
		}
		w, err := src.Create(ctx, Header{ID: "p", Cwd: rapid.StringMatching(`/[a-zé ]{0,8}`).Draw(rt, "cwd")})
		if err != nil {
			rt.Fatal(err)
		}
		turns := rapid.IntRange(1, 4).Draw(rt, "turns")
		for turn := 1; turn <= turns; turn++ {
			evs := []Event{
				TurnStart{Turn: turn}.Event(),
				UserMessage{Message: content.Message{Content: content.Texts(rapid.String().Draw(rt, "prompt"))}}.Event(),
				StepStart{Turn: turn}.Event(),
			}
			calls := rapid.IntRange(0, 3).Draw(rt, "calls")
			m := content.Message{Source: &content.Source{Kind: "model"}, Content: content.Texts(rapid.String().Draw(rt, "reply"))}
			for c := range calls {
				m.Content = append(m.Content, content.ToolCall(fmt.Sprintf("c%d-%d", turn, c), "tool", `{"x":1}`))
			}
			evs = append(evs, AssistantMessage{Turn: turn, Message: m}.Event())
			for _, e := range evs {
				if rapid.Bool().Draw(rt, "durable") {
					_, err = w.AppendDurable(e)
				} else {
					_, err = w.Append(e)
				}
				if err != nil {
					rt.Fatal(err)
				}
			}
		}
		if err := w.Close(); err != nil {
			rt.Fatal(err)
		}
		data := exportOf(t, src, "p")
		dst, err := Open(dir+"/b", Options{Compression: rapid.SampledFrom(compressions).Draw(rt, "to")})
		if err != nil {
			rt.Fatal(err)
		}
		if _, err := Import(ctx, dst, bytes.NewReader(data)); err != nil {
			rt.Fatal(err)
		}
		if got := exportOf(t, dst, "p"); !bytes.Equal(got, data) {
			rt.Fatalf("round trip differs")
		}
	})
}

// FuzzImport feeds arbitrary bytes to Import: it never panics, refuses with an error or
// stores a session whose export imports and exports again to the same bytes.
func FuzzImport(f *testing.F) {
	for _, c := range compressions {
		data := sampleLog(f, c)
		f.Add(data)
		f.Add(data[:len(data)-3])
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		st, err := Open(t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := Import(ctx, st, bytes.NewReader(data))
		if err != nil {
			return
		}
		out := exportOf(t, st, h.ID)
		again, err := Open(t.TempDir(), Options{Compression: CompressionNone})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Import(ctx, again, bytes.NewReader(out)); err != nil {
			t.Fatalf("the export of an imported session does not import: %v", err)
		}
		if got := exportOf(t, again, h.ID); !bytes.Equal(got, out) {
			t.Fatalf("export is not stable:\n%s\n---\n%s", got, out)
		}
	})
}
