package spill_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/spill"
	"github.com/dsh-go/dsh/tool"
)

// TestPropertyInstallEqualsPostExecute: the policy as Install adds it (a post-decision
// hook) ends every call, and saves every text, exactly as the policy registered as
// PostExecute (a hook that calls next) does: short and long texts, successes and failures,
// with a later hook that accepts, replaces the content, blocks or fails.
func TestPropertyInstallEqualsPostExecute(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := strings.Repeat("x", rapid.SampledFrom([]int{0, 10, 299, 300, 301, 2000}).Draw(t, "size"))
		fail := rapid.Bool().Draw(t, "fail")
		later := rapid.SampledFrom([]string{"accept", "replace", "block", "error"}).Draw(t, "later")
		replacement := strings.Repeat("y", rapid.SampledFrom([]int{5, 1000}).Draw(t, "replacement"))
		run := func(installed bool) (string, []spill.SaveRequest) {
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			def := contentTool("t", content.Texts(text))
			if fail {
				def.Execute = func(context.Context, *tool.Call) (any, error) { return nil, errors.New(text) }
			}
			if _, err := reg.Register(def); err != nil {
				t.Fatal(err)
			}
			reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				d, err := next()
				switch later {
				case "replace":
					d.ReplaceContent, d.Content = true, content.Texts(replacement)
				case "block":
					d = tool.BlockWith(content.Texts(replacement))
				case "error":
					return d, errors.New("later hook failed")
				}
				return d, err
			})
			store := &stubStore{}
			cfg := spill.Config{MaxInlineBytes: 300, Store: store}
			if installed {
				if _, err := spill.Install(reg.Global(), cfg); err != nil {
					t.Fatal(err)
				}
			} else {
				p, err := spill.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				reg.OnPostExecute(p.PostExecute, tool.Prepend(), tool.ReadOnly())
			}
			res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "t", Args: &jsonv.Object{}})
			b, err := res.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			return string(b), store.saves
		}
		gotRes, gotSaves := run(true)
		wantRes, wantSaves := run(false)
		if gotRes != wantRes {
			t.Fatalf("result\n  installed: %s\nPostExecute: %s", gotRes, wantRes)
		}
		if !reflect.DeepEqual(gotSaves, wantSaves) {
			t.Fatalf("saves\n  installed: %+v\nPostExecute: %+v", gotSaves, wantSaves)
		}
	})
}
