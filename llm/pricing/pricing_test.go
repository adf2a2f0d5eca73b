package pricing_test

import (
	"math"
	"testing"
	"time"

	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/pricing"
)

// beijing builds a Beijing wall-clock time; the table must read it the same in any zone.
func beijing(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04", s, time.FixedZone("CST", 8*3600))
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestIsPeak(t *testing.T) {
	tab := pricing.Default()
	tab.Holidays = []string{"2026-10-01"}
	tests := []struct {
		at   string
		peak bool
	}{
		{"2026-12-01 08:59", false}, // Tuesday, before 9:00
		{"2026-12-01 09:00", true},
		{"2026-12-01 11:59", true},
		{"2026-12-01 12:00", false}, // lunch
		{"2026-12-01 13:59", false},
		{"2026-12-01 14:00", true},
		{"2026-12-01 17:59", true},
		{"2026-12-01 18:00", false},
		{"2026-12-05 10:00", false}, // Saturday
		{"2026-12-06 15:00", false}, // Sunday
		{"2026-10-01 10:00", false}, // a configured holiday (a Thursday)
		{"2026-10-08 10:00", true},  // a Thursday that is not
	}
	for _, tt := range tests {
		if got := tab.IsPeak(beijing(tt.at)); got != tt.peak {
			t.Errorf("IsPeak(%s Beijing) = %v, want %v", tt.at, got, tt.peak)
		}
	}
	// 02:00 UTC is 10:00 in Beijing.
	if !tab.IsPeak(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)) {
		t.Error("02:00 UTC on a Tuesday is peak time in Beijing")
	}
}

func TestCost(t *testing.T) {
	tab := pricing.Default()
	u := llm.Usage{InputTokens: 1_000_000, CacheReadTokens: 1_000_000, OutputTokens: 1_000_000, ReasoningTokens: 400_000}
	tests := []struct {
		model, at string
		want      float64
	}{
		{"deepseek-flash", "2026-12-01 10:00", 0.04 + 2 + 8},
		{"deepseek-flash", "2026-12-01 20:00", (0.04 + 2 + 8) / 2},
		{"deepseek-v4-flash", "2026-12-01 10:00", 0.04 + 2 + 8},
		{"deepseek-v4-pro", "2026-12-01 10:00", 0.30 + 9 + 27},
		{"deepseek-v4-pro", "2026-12-05 10:00", 0.15 + 4.5 + 13.5},
	}
	for _, tt := range tests {
		got, ok := tab.Cost(tt.model, u, beijing(tt.at))
		if !ok || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Cost(%s at %s) = %v, %v; want %v", tt.model, tt.at, got, ok, tt.want)
		}
	}
	if _, ok := tab.Cost("gpt-4.1", u, time.Now()); ok {
		t.Error("a model without a price has a cost")
	}
	if got := tab.WebCost(1000); math.Abs(got-5) > 1e-9 {
		t.Errorf("WebCost(1000) = %v, want 5", got)
	}
}

func TestValidate(t *testing.T) {
	if err := pricing.Default().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*pricing.Table){
		func(t *pricing.Table) { t.Models["x"] = pricing.Price{Output: -1} },
		func(t *pricing.Table) { t.Models["x"] = pricing.Price{CacheHit: math.NaN()} },
		func(t *pricing.Table) { t.OffPeakFactor = 0 },
		func(t *pricing.Table) { t.OffPeakFactor = 1.5 },
		func(t *pricing.Table) { t.WebRequest = -0.1 },
		func(t *pricing.Table) { t.Holidays = []string{"1 Oct"} },
		func(t *pricing.Table) { t.Currency = "" },
	}
	for i, f := range bad {
		tab := pricing.Default()
		f(&tab)
		if err := tab.Validate(); err == nil {
			t.Errorf("case %d: Validate accepted %+v", i, tab)
		}
	}
}
