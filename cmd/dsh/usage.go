package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/pricing"
	"github.com/dsh-go/dsh/session"
)

// spend is the token usage and estimated cost of some model calls and web requests.
type spend struct {
	tokens   session.Tokens
	cost     float64
	unpriced []string // models with no price in the table
	web      int      // successful Search and Fetch API requests
	peak     int      // priced model calls made in peak hours
	offPeak  int      // priced model calls made off-peak
}

func (s *spend) addStep(st session.StepUsage, tab pricing.Table) {
	s.tokens = s.tokens.Add(st.Tokens)
	u := llm.Usage{InputTokens: st.Input, CacheReadTokens: st.CachedInput, OutputTokens: st.Output, ReasoningTokens: st.Reasoning}
	if c, ok := tab.Cost(st.Model, u, st.Time); ok {
		s.cost += c
		if tab.IsPeak(st.Time) {
			s.peak++
		} else {
			s.offPeak++
		}
		return
	}
	name := st.Model
	if name == "" {
		name = "a model the log does not name"
	}
	for _, m := range s.unpriced {
		if m == name {
			return
		}
	}
	s.unpriced = append(s.unpriced, name)
}

func (s *spend) addWeb(n int, tab pricing.Table) {
	s.web += n
	s.cost += tab.WebCost(n)
}

func (s spend) empty() bool { return s.tokens == (session.Tokens{}) && s.web == 0 }

// estimated reports whether a cost was estimated: something had a price.
func (s spend) estimated() bool { return s.cost > 0 || len(s.unpriced) == 0 }

// String renders e.g. "12,345 input tokens (10,240 cached) · 512 output (300 reasoning) ·
// 2 web requests · ≈ ¥0.0123".
func (s spend) String(tab pricing.Table) string {
	t := s.tokens
	in := thousands(t.Input+t.CachedInput) + " input tokens"
	if t.CachedInput > 0 {
		in += " (" + thousands(t.CachedInput) + " cached)"
	}
	out := thousands(t.Output) + " output"
	if t.Reasoning > 0 {
		out += " (" + thousands(t.Reasoning) + " reasoning)"
	}
	parts := []string{in, out}
	if s.web > 0 {
		parts = append(parts, fmt.Sprintf("%d web request%s", s.web, usagePlural(s.web)))
	}
	switch {
	case len(s.unpriced) > 0 && s.cost == 0:
		parts = append(parts, "cost unknown (no price for "+strings.Join(s.unpriced, ", ")+")")
	case len(s.unpriced) > 0:
		parts = append(parts, "≈ "+money(s.cost, tab.Currency)+" + unpriced "+strings.Join(s.unpriced, ", "))
	default:
		parts = append(parts, "≈ "+money(s.cost, tab.Currency))
	}
	switch {
	case s.peak > 0 && s.offPeak > 0:
		parts[len(parts)-1] += " (peak and off-peak hours)"
	case s.peak > 0:
		parts[len(parts)-1] += " (peak hours)"
	case s.offPeak > 0:
		parts[len(parts)-1] += " (off-peak hours)"
	}
	return strings.Join(parts, " · ")
}

func usagePlural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// money renders an amount with enough digits to show small costs.
func money(v float64, currency string) string {
	sym := currency + " "
	if currency == "CNY" {
		sym = "¥"
	}
	switch {
	case v == 0:
		return sym + "0"
	case v < 0.01:
		return sym + strconv.FormatFloat(v, 'f', 4, 64)
	default:
		return sym + strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// thousands renders n with comma separators.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// sessionSpend sums the usage of a session's events per turn and in total, with each model
// call priced at the time it was made and each successful web request at the table's price.
func sessionSpend(events []session.Event, tab pricing.Table) (turns map[int]*spend, order []int, total spend, err error) {
	u, err := session.UsageOf(events)
	if err != nil {
		return nil, nil, spend{}, err
	}
	turns = map[int]*spend{}
	get := func(turn int) *spend {
		if turns[turn] == nil {
			turns[turn] = &spend{}
			order = append(order, turn)
		}
		return turns[turn]
	}
	for _, st := range u.Steps {
		get(st.Turn).addStep(st, tab)
		total.addStep(st, tab)
	}
	// Web requests: each successful web_fetch is one, each successful web_search one per
	// distinct query.
	args := map[string]session.ToolCall{}
	for _, e := range events {
		switch e.Type {
		case session.TypeToolCall:
			if c, err := session.DecodeToolCall(e); err == nil {
				args[c.CallID] = c
			}
		case session.TypeToolResult:
			r, err := session.DecodeToolResult(e)
			if err != nil || r.IsError {
				continue
			}
			c, ok := args[r.CallID]
			if !ok {
				continue
			}
			n := webRequests(c)
			if n > 0 {
				get(r.Turn).addWeb(n, tab)
				total.addWeb(n, tab)
			}
		}
	}
	return turns, order, total, nil
}

// webRequests is how many billed API requests a successful web tool call made.
func webRequests(c session.ToolCall) int {
	switch c.Name {
	case "web_fetch":
		return 1
	case "web_search":
		var in struct {
			Queries []string `json:"queries"`
		}
		if json.Unmarshal([]byte(c.Arguments), &in) != nil {
			return 0
		}
		seen := map[string]bool{}
		for _, q := range in.Queries {
			seen[q] = true
		}
		return len(seen)
	}
	return 0
}

// usageLines renders the usage of a session: one line per turn when there are several, and
// the total. Nothing when no usage was recorded.
func usageLines(events []session.Event, tab pricing.Table) ([]string, error) {
	turns, order, total, err := sessionSpend(events, tab)
	if err != nil || total.empty() {
		return nil, err
	}
	var lines []string
	if len(order) > 1 {
		for _, t := range order {
			lines = append(lines, fmt.Sprintf("turn %d: %s", t, turns[t].String(tab)))
		}
	}
	line := "usage: " + total.String(tab)
	if total.estimated() {
		line += " (estimated)"
	}
	return append(lines, line), nil
}

// lastTurnLine renders the usage of the session's last turn, and the session's total when
// it has earlier turns: what "dsh run" prints when its turn ends.
func lastTurnLine(events []session.Event, tab pricing.Table) (string, error) {
	turns, order, total, err := sessionSpend(events, tab)
	if err != nil || len(order) == 0 {
		return "", err
	}
	last := turns[order[len(order)-1]]
	line := "usage: " + last.String(tab)
	if len(order) > 1 {
		line += " · session so far: " + total.String(tab)
	}
	if total.estimated() {
		line += " (estimated)"
	}
	return line, nil
}
