package search

import (
	"github.com/go-json-experiment/json"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/jsonv"
)

// The presentation meta persisted with a search result: the capped, structured result a
// search card shows, with the pre-cap total. Field order is the wire order.
type pathsMeta struct {
	Shape     string   `json:"shape"`
	Paths     []string `json:"paths"`
	Truncated bool     `json:"truncated"`
	Total     int      `json:"total"`
}

type matchesMeta struct {
	Shape     string            `json:"shape"`
	Files     []card.SearchFile `json:"files"`
	Truncated bool              `json:"truncated"`
	Total     int               `json:"total"`
}

// jsonSize is the byte length of v encoded as compact JSON (0 when it cannot be encoded).
func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// keepWithin returns how many leading items fit in max bytes of JSON, given the size of
// the enclosing document with an empty list. At least one item is always kept: the cap
// bounds the payload wherever something can be dropped, never hides the whole result.
func keepWithin[T any](items []T, overhead, max int) int {
	size := overhead
	for i, it := range items {
		size += jsonSize(it)
		if i > 0 {
			size++ // the comma
		}
		if size > max && i > 0 {
			return i
		}
	}
	return len(items)
}

func capPathsMeta(items []string, truncated bool, total, max int) pathsMeta {
	m := pathsMeta{Shape: "paths", Paths: items, Truncated: truncated, Total: total}
	if jsonSize(m) <= max {
		return m
	}
	empty := pathsMeta{Shape: "paths", Paths: []string{}, Truncated: true, Total: total}
	m.Paths = items[:keepWithin(items, jsonSize(empty), max)]
	m.Truncated = true
	return m
}

func capMatchesMeta(files []card.SearchFile, truncated bool, total, max int) matchesMeta {
	m := matchesMeta{Shape: "matches", Files: files, Truncated: truncated, Total: total}
	if jsonSize(m) <= max {
		return m
	}
	empty := matchesMeta{Shape: "matches", Files: []card.SearchFile{}, Truncated: true, Total: total}
	m.Files = files[:keepWithin(files, jsonSize(empty), max)]
	m.Truncated = true
	return m
}

// searchCard narrows the persisted meta of a successful result to the search card of the
// given shape; malformed or absent meta (an old or edited log) yields nil, the generic card.
func searchCard(res card.ToolResult, shape string) *card.Result {
	if res.IsError || res.Meta == nil {
		return nil
	}
	o, ok := res.Meta.(*jsonv.Object)
	if !ok {
		return nil
	}
	if s, _ := o.Get("shape"); s != shape {
		return nil
	}
	switch shape {
	case "paths":
		var m pathsMeta
		if jsonv.Decode(res.Meta, &m) != nil || !hasMembers(o, "paths", "truncated", "total") {
			return nil
		}
		paths := m.Paths
		if paths == nil {
			paths = []string{}
		}
		return &card.Result{Card: card.Search, Shape: shape, Paths: paths, Truncated: m.Truncated, Total: m.Total}
	default:
		var m matchesMeta
		if jsonv.Decode(res.Meta, &m) != nil || !hasMembers(o, "files", "truncated", "total") {
			return nil
		}
		files := m.Files
		if files == nil {
			files = []card.SearchFile{}
		}
		return &card.Result{Card: card.Search, Shape: shape, Files: files, Truncated: m.Truncated, Total: m.Total}
	}
}

func hasMembers(o *jsonv.Object, names ...string) bool {
	for _, n := range names {
		if _, ok := o.Get(n); !ok {
			return false
		}
	}
	return true
}
