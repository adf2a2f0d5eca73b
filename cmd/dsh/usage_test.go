package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/llm/pricing"
	"github.com/dsh-go/dsh/session"
)

// reply is an assistant/message event with usage, logged at a given Beijing wall time.
func loggedReply(t *testing.T, turn int, beijing string, usage string) session.Event {
	t.Helper()
	at, err := time.ParseInLocation("2006-01-02 15:04", beijing, time.FixedZone("CST", 8*3600))
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonv.Parse([]byte(usage))
	if err != nil {
		t.Fatal(err)
	}
	e := session.AssistantMessage{Turn: turn, Step: 1, Message: content.Message{Content: content.Texts("ok")}, Usage: v}.Event()
	e.Time = at.UnixMilli()
	return e
}

// The cost of each call follows the hour it was made, on an injected time, not the clock.
func TestUsageLinesPeakAndOffPeak(t *testing.T) {
	tab := pricing.Default()
	tab.Holidays = []string{"2026-10-01"}
	const million = `{"inputTokens":1000000,"outputTokens":0,"model":"deepseek-flash"}`
	tests := []struct {
		name   string
		events []session.Event
		want   []string
	}{
		{"peak", []session.Event{loggedReply(t, 1, "2026-12-01 10:30", million)},
			[]string{"usage: 1,000,000 input tokens · 0 output · ≈ ¥2.00 (peak hours) (estimated)"}},
		{"evening", []session.Event{loggedReply(t, 1, "2026-12-01 19:00", million)},
			[]string{"usage: 1,000,000 input tokens · 0 output · ≈ ¥1.00 (off-peak hours) (estimated)"}},
		{"holiday", []session.Event{loggedReply(t, 1, "2026-10-01 10:30", million)},
			[]string{"usage: 1,000,000 input tokens · 0 output · ≈ ¥1.00 (off-peak hours) (estimated)"}},
		{"both, two turns", []session.Event{loggedReply(t, 1, "2026-12-01 11:59", million), loggedReply(t, 2, "2026-12-01 12:00", million)},
			[]string{
				"turn 1: 1,000,000 input tokens · 0 output · ≈ ¥2.00 (peak hours)",
				"turn 2: 1,000,000 input tokens · 0 output · ≈ ¥1.00 (off-peak hours)",
				"usage: 2,000,000 input tokens · 0 output · ≈ ¥3.00 (peak and off-peak hours) (estimated)",
			}},
		{"older log", []session.Event{loggedReply(t, 1, "2026-12-01 10:30", `{"inputTokens":5,"outputTokens":1}`)},
			[]string{"usage: 5 input tokens · 1 output · cost unknown (no price for a model the log does not name)"}},
		{"no usage", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := usageLines(tt.events, tab)
			if err != nil || strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("usageLines = %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}
	bad := loggedReply(t, 1, "2026-12-01 10:30", `{"inputTokens":-1}`)
	if _, err := usageLines([]session.Event{bad}, tab); err == nil {
		t.Error("a malformed usage was accepted")
	}
}

func TestThousandsAndMoney(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q", n, got)
		}
	}
	for _, c := range []struct {
		v    float64
		cur  string
		want string
	}{{0, "CNY", "¥0"}, {0.00312, "CNY", "¥0.0031"}, {12.345, "CNY", "¥12.35"}, {1.5, "USD", "USD 1.50"}} {
		if got := money(c.v, c.cur); got != c.want {
			t.Errorf("money(%v, %s) = %q, want %q", c.v, c.cur, got, c.want)
		}
	}
}
