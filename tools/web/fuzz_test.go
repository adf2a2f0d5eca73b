package web

import (
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// FuzzSearchAnswer feeds arbitrary Search API answers (untrusted input) through decoding,
// merging and rendering: nothing panics, the merged sources have no duplicate or empty URL
// and stay within the bound, and every source is rendered.
func FuzzSearchAnswer(f *testing.F) {
	f.Add([]byte(`{"answer":"a","results":[{"url":"https://a","title":"A","snippet":"s","published_at":"2026-01-01"}],"truncated":false}`), []byte(`{"results":[{"url":"https://a"},{"url":"https://b"}]}`), uint8(2))
	f.Add([]byte(`{"results":null}`), []byte(`{}`), uint8(8))
	f.Add([]byte(`{"results":[{"url":""},{"url":"x\u0000"}]}`), []byte(`[1,2]`), uint8(1))
	f.Fuzz(func(t *testing.T, a, b []byte, max uint8) {
		bound := int(max%20) + 1
		var results []searchResponse
		for _, data := range [][]byte{a, b} {
			var r searchResponse
			if json.Unmarshal(data, &r) == nil {
				results = append(results, r)
			}
		}
		queries := make([]string, len(results))
		for i := range queries {
			queries[i] = "q" + string(rune('a'+i))
		}
		out := merge(queries, results, bound)
		checkMerged(t, out, bound)
		text := renderSearch(out)
		for _, s := range out.Sources {
			if !strings.Contains(text, "("+s.URL+")") {
				t.Fatalf("source %q missing from the text", s.URL)
			}
		}
	})
}

// FuzzFetchAnswer renders arbitrary Fetch API answers without panicking, always starting
// with the header line.
func FuzzFetchAnswer(f *testing.F) {
	f.Add([]byte(`{"url":"https://a","status_code":200,"title":"T","content":"# T\n\nbody","truncated":true}`))
	f.Add([]byte(`{"status_code":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r fetchResponse
		if json.Unmarshal(data, &r) != nil {
			return
		}
		out := FetchOutput{URL: r.URL, StatusCode: r.StatusCode, Title: r.Title, Content: r.Content, Truncated: r.Truncated}
		text := renderFetch(out)
		if !strings.HasPrefix(text, "Fetched "+r.URL+" (HTTP ") || strings.HasSuffix(text, truncatedNote) != r.Truncated && !strings.HasSuffix(r.Content, truncatedNote) {
			t.Fatalf("rendered %q", text)
		}
	})
}

func checkMerged(t interface{ Fatalf(string, ...any) }, out SearchOutput, bound int) {
	if len(out.Sources) > bound {
		t.Fatalf("%d sources, bound %d", len(out.Sources), bound)
	}
	seen := map[string]bool{}
	for _, s := range out.Sources {
		if s.URL == "" || seen[s.URL] {
			t.Fatalf("empty or duplicate URL %q in %v", s.URL, out.Sources)
		}
		seen[s.URL] = true
	}
}

// Merging keeps the first-ranked source of every query (when the bound allows), loses a
// source only when the bound is reached, and says so.
func TestPropertyMerge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		urls := rapid.SampledFrom([]string{"https://a", "https://b", "https://c", "https://d", "https://e", ""})
		n := rapid.IntRange(1, 4).Draw(t, "queries")
		results := make([]searchResponse, n)
		queries := make([]string, n)
		distinct := map[string]bool{}
		for i := range results {
			queries[i] = string(rune('a' + i))
			k := rapid.IntRange(0, 6).Draw(t, "results")
			for range k {
				u := urls.Draw(t, "url")
				results[i].Results = append(results[i].Results, struct {
					URL         string `json:"url"`
					Title       string `json:"title"`
					Snippet     string `json:"snippet"`
					PublishedAt string `json:"published_at"`
				}{URL: u})
				if u != "" {
					distinct[u] = true
				}
			}
		}
		bound := rapid.IntRange(1, 8).Draw(t, "bound")
		out := merge(queries, results, bound)
		checkMerged(t, out, bound)
		if want := min(len(distinct), bound); len(out.Sources) != want {
			t.Fatalf("%d sources, want %d (distinct %d, bound %d)", len(out.Sources), want, len(distinct), bound)
		}
		if len(distinct) > bound && !out.Truncated {
			t.Fatalf("sources were dropped without saying so")
		}
		if len(distinct) <= bound && out.Truncated {
			t.Fatalf("truncated without dropping anything")
		}
	})
}
