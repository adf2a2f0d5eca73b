package session_test

import (
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
)

func assistant(t *testing.T, turn, step int, usage string) session.Event {
	t.Helper()
	p := session.AssistantMessage{Turn: turn, Step: step, Message: content.Message{Content: content.Texts("ok")}}
	if usage != "" {
		v, err := jsonv.Parse([]byte(usage))
		if err != nil {
			t.Fatal(err)
		}
		p.Usage = v
	}
	e := p.Event()
	e.Time = 1764547200000 + int64(turn*1000+step)
	return e
}

func TestUsageOfSumsStepsTurnsAndSession(t *testing.T) {
	events := []session.Event{
		assistant(t, 1, 1, `{"inputTokens":100,"outputTokens":20,"cacheReadTokens":640,"reasoningTokens":5,"model":"deepseek-flash"}`),
		assistant(t, 1, 2, `{"inputTokens":10,"outputTokens":2}`), // an older log: no model
		assistant(t, 2, 1, ""), // no usage reported
		assistant(t, 3, 1, `{"inputTokens":1,"outputTokens":1,"model":"deepseek-v4-pro"}`),
	}
	u, err := session.UsageOf(events)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Steps) != 3 || u.Steps[0].Model != "deepseek-flash" || u.Steps[1].Model != "" || u.Steps[2].Turn != 3 ||
		u.Steps[0].Time.UnixMilli() != 1764547201001 {
		t.Errorf("steps = %+v", u.Steps)
	}
	want := []session.TurnUsage{
		{Turn: 1, Tokens: session.Tokens{Input: 110, CachedInput: 640, Output: 22, Reasoning: 5}},
		{Turn: 3, Tokens: session.Tokens{Input: 1, Output: 1}},
	}
	if len(u.Turns) != 2 || u.Turns[0] != want[0] || u.Turns[1] != want[1] {
		t.Errorf("turns = %+v", u.Turns)
	}
	if u.Total != (session.Tokens{Input: 111, CachedInput: 640, Output: 23, Reasoning: 5}) {
		t.Errorf("total = %+v", u.Total)
	}
}

func TestUsageOfRejectsMalformedUsage(t *testing.T) {
	for _, bad := range []string{`"lots"`, `{"inputTokens":-1}`, `{"outputTokens":1.5}`, `{"inputTokens":"3"}`, `{"model":3}`, `{"inputTokens":1e13}`} {
		_, err := session.UsageOf([]session.Event{assistant(t, 1, 1, bad)})
		if err == nil || !strings.Contains(err.Error(), "usage") {
			t.Errorf("usage %s: error = %v", bad, err)
		}
	}
}

// BenchmarkUsageOf sums a long session's usage, as dsh session show does.
func BenchmarkUsageOf(b *testing.B) {
	var events []session.Event
	for i := range 2000 {
		p := session.AssistantMessage{Turn: i/10 + 1, Step: i%10 + 1, Message: content.Message{Content: content.Texts("ok")},
			Usage: jsonv.NewObject(
				jsonv.Member{Name: "inputTokens", Value: float64(i)},
				jsonv.Member{Name: "outputTokens", Value: 10.0},
				jsonv.Member{Name: "cacheReadTokens", Value: 640.0},
				jsonv.Member{Name: "model", Value: "deepseek-flash"},
			)}
		events = append(events, p.Event())
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := session.UsageOf(events); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzUsageOf reads arbitrary usage members (a log is data from disk): UsageOf either
// refuses them with an error or returns non-negative counts whose total is the sum of the
// turns.
func FuzzUsageOf(f *testing.F) {
	f.Add(`{"inputTokens":100,"outputTokens":20,"cacheReadTokens":640,"reasoningTokens":5,"model":"deepseek-flash"}`, `{"inputTokens":1,"outputTokens":1}`)
	f.Add(`{"inputTokens":1e300}`, `[]`)
	f.Add(`{"model":null}`, `{"outputTokens":0.5}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		var events []session.Event
		for i, s := range []string{a, b} {
			v, err := jsonv.Parse([]byte(s))
			if err != nil {
				return
			}
			events = append(events, session.AssistantMessage{Turn: i + 1, Step: 1, Message: content.Message{Content: content.Texts("x")}, Usage: v}.Event())
		}
		u, err := session.UsageOf(events)
		if err != nil {
			return
		}
		var sum session.Tokens
		for _, tu := range u.Turns {
			sum = sum.Add(tu.Tokens)
		}
		if sum != u.Total || u.Total.Input < 0 || u.Total.CachedInput < 0 || u.Total.Output < 0 || u.Total.Reasoning < 0 {
			t.Fatalf("turns %+v total %+v", u.Turns, u.Total)
		}
	})
}
