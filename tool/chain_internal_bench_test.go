package tool

import (
	"context"
	"testing"
)

// BenchmarkHookChains runs the pre-execute and post-execute chains alone, with the hooks
// dsh run installs in their frameless forms (one OnPreCheck hook, the permission rules';
// three ReadOnly OnPostDecision hooks, the spill, redaction and reminder policies'), each
// hook doing nothing: what is measured is the chains' own overhead per call.
func BenchmarkHookChains(b *testing.B) {
	ctx := context.Background()
	exec := &Execution{name: "t"}
	check := func(context.Context, *Execution) (PreDecision, bool, error) { return PreDecision{}, false, nil }
	decide := func(_ context.Context, _ *Execution, _ *Result, d PostDecision, err error) (PostDecision, error) {
		return d, err
	}
	b.Run("pre-1-check", func(b *testing.B) {
		p := &prepareRun{ctx: ctx, exec: exec, chain: []*hook[PreExecuteFunc]{{check: check}}}
		b.ReportAllocs()
		for b.Loop() {
			if d, err := p.runPre(ctx, exec, p.chain); err != nil || d.Kind != PreAllow {
				b.Fatal(d, err)
			}
		}
	})
	b.Run("post-3-decide", func(b *testing.B) {
		res := Success("ok", nil)
		c := &postRun{ctx: ctx, exec: exec, res: res, chain: []*hook[PostExecuteFunc]{
			{decide: decide, readOnly: true}, {decide: decide, readOnly: true}, {decide: decide, readOnly: true}}}
		b.ReportAllocs()
		for b.Loop() {
			if d, err := c.step(0); err != nil || d.Block {
				b.Fatal(d, err)
			}
		}
	})
}
