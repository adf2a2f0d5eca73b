// Package pricing estimates what model calls and web tool requests cost, from a price table
// that knows DeepSeek's peak and off-peak hours.
//
// DeepSeek bills per million tokens, separately for input served from its context cache
// (a cache hit), other input (a cache miss) and output (reasoning included), in CNY. Prices
// are the peak prices; off-peak they are multiplied by OffPeakFactor (one half). Peak hours
// are Beijing time (UTC+8), Monday to Friday, 9:00–12:00 and 14:00–18:00, except on the
// Chinese public holidays listed in Table.Holidays. The Search and Fetch APIs are billed per
// successful request (WebRequest).
//
// The defaults are DeepSeek's prices as checked on 2026-12-01. An estimate is only as good
// as its table: a model missing from it has no estimate, and the holiday list is empty
// unless configured.
package pricing

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/dsh-go/dsh/llm"
)

// Currency is the currency of the default table's prices.
const Currency = "CNY"

// Price is a model's peak price in currency units per million tokens.
type Price struct {
	// CacheHit is the price of input tokens served from the context cache.
	CacheHit float64 `yaml:"cacheHit" json:"cacheHit"`
	// CacheMiss is the price of other input tokens.
	CacheMiss float64 `yaml:"cacheMiss" json:"cacheMiss"`
	// Output is the price of output tokens, reasoning tokens included.
	Output float64 `yaml:"output" json:"output"`
}

// Table is a price table.
type Table struct {
	// Currency names the unit of every price, e.g. "CNY".
	Currency string `yaml:"currency" json:"currency"`
	// Models maps a model name to its peak price.
	Models map[string]Price `yaml:"models" json:"models"`
	// OffPeakFactor multiplies token prices outside peak hours (DeepSeek: 0.5).
	OffPeakFactor float64 `yaml:"offPeakFactor" json:"offPeakFactor"`
	// WebRequest is the price of one successful Search or Fetch API request.
	WebRequest float64 `yaml:"webRequest" json:"webRequest"`
	// Holidays are the dates (YYYY-MM-DD, Beijing time) with no peak hours.
	Holidays []string `yaml:"holidays" json:"holidays"`
}

// Default returns DeepSeek's prices as checked on 2026-12-01, in CNY.
func Default() Table {
	flash := Price{CacheHit: 0.04, CacheMiss: 2, Output: 8}
	return Table{
		Currency: Currency,
		Models: map[string]Price{
			"deepseek-flash":    flash,
			"deepseek-v4-flash": flash, // the older id, served by V4.1 Flash
			"deepseek-v4-pro":   {CacheHit: 0.30, CacheMiss: 9, Output: 27},
		},
		OffPeakFactor: 0.5,
		WebRequest:    5.0 / 1000,
		Holidays:      []string{},
	}
}

// Validate reports the first invalid entry: a negative or non-finite price, an off-peak
// factor outside (0, 1], or a holiday that is not a YYYY-MM-DD date.
func (t Table) Validate() error {
	bad := func(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }
	for _, name := range slices.Sorted(maps.Keys(t.Models)) {
		p := t.Models[name]
		if bad(p.CacheHit) || bad(p.CacheMiss) || bad(p.Output) {
			return fmt.Errorf("the prices of model %q must be non-negative numbers, got %+v", name, p)
		}
	}
	if !(t.OffPeakFactor > 0 && t.OffPeakFactor <= 1) {
		return fmt.Errorf("offPeakFactor must be above 0 and at most 1, got %v", t.OffPeakFactor)
	}
	if bad(t.WebRequest) {
		return fmt.Errorf("webRequest must be a non-negative number, got %v", t.WebRequest)
	}
	for _, d := range t.Holidays {
		if _, err := time.Parse(time.DateOnly, d); err != nil {
			return fmt.Errorf("holiday %q is not a date like 2026-10-01", d)
		}
	}
	if t.Currency == "" {
		return errors.New("currency must not be empty")
	}
	return nil
}

// beijing is UTC+8, which has no daylight saving time.
var beijing = time.FixedZone("Beijing", 8*60*60)

// IsPeak reports whether at falls in DeepSeek's peak hours: Monday to Friday, 9:00–12:00
// and 14:00–18:00 Beijing time, on a day that is not one of t.Holidays.
func (t Table) IsPeak(at time.Time) bool {
	b := at.In(beijing)
	switch b.Weekday() {
	case time.Saturday, time.Sunday:
		return false
	}
	if slices.Contains(t.Holidays, b.Format(time.DateOnly)) {
		return false
	}
	h := b.Hour()
	return (h >= 9 && h < 12) || (h >= 14 && h < 18)
}

// Cost returns the estimated cost of one model call's usage at the time it was made, and
// false when the table has no price for the model.
func (t Table) Cost(model string, u llm.Usage, at time.Time) (float64, bool) {
	p, ok := t.Models[model]
	if !ok {
		return 0, false
	}
	c := (float64(u.CacheReadTokens)*p.CacheHit + float64(u.InputTokens)*p.CacheMiss + float64(u.OutputTokens)*p.Output) / 1e6
	if !t.IsPeak(at) {
		c *= t.OffPeakFactor
	}
	return c, true
}

// WebCost returns the cost of n successful Search or Fetch API requests.
func (t Table) WebCost(n int) float64 { return float64(n) * t.WebRequest }
