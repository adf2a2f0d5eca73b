package tsstrip

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// PositionMap maps positions in a stripped body back to the program it came from, so that
// stack traces can name the lines the model wrote rather than esbuild's reformatted output.
type PositionMap struct {
	// lines[i] holds the segments of body line i+1, sorted by generated column.
	lines [][]Segment
}

// Segment says that from generated column GenColumn (0-based) on, the body line comes
// from program line Line and column Column (both 1-based).
type Segment struct {
	GenColumn int
	Line      int
	Column    int
}

// Original returns the program position of a 1-based line and column of the stripped
// body: the start of the source-map segment holding it. It reports false when the body
// position maps to no program code.
func (m *PositionMap) Original(line, column int) (origLine, origColumn int, ok bool) {
	if m == nil || line < 1 || line > len(m.lines) {
		return 0, 0, false
	}
	segs := m.lines[line-1]
	i := sort.Search(len(segs), func(i int) bool { return segs[i].GenColumn > column-1 }) - 1
	if i < 0 {
		if len(segs) == 0 {
			return 0, 0, false
		}
		i = 0
	}
	// A segment maps its whole generated span to the position where it starts.
	return segs[i].Line, segs[i].Column, true
}

// Lines returns the segments of every body line (index 0 is line 1). The slices are the
// map's own storage.
func (m *PositionMap) Lines() [][]Segment {
	if m == nil {
		return nil
	}
	return m.lines
}

// StripMapped is Strip that also returns the map from body positions to program positions.
func StripMapped(program string) (string, *PositionMap, error) {
	code, sourceMap, err := strip(program, true)
	if err != nil {
		return "", nil, err
	}
	m, err := parseSourceMap(sourceMap)
	if err != nil {
		return "", nil, err
	}
	return code, m, nil
}

// parseSourceMap decodes esbuild's version 3 source map of the wrapped program. Generated
// line 0 is the wrapper's first line, so body line n is generated line n; source line n
// (0-based) of the wrapped input is program line n (1-based) for the same reason.
func parseSourceMap(data []byte) (*PositionMap, error) {
	var sm struct {
		Version  int    `json:"version"`
		Mappings string `json:"mappings"`
	}
	if err := json.Unmarshal(data, &sm); err != nil {
		return nil, fmt.Errorf("tsstrip: decode the source map: %w", err)
	}
	if sm.Version != 3 {
		return nil, fmt.Errorf("tsstrip: source map version %d", sm.Version)
	}
	lines := strings.Split(sm.Mappings, ";")
	m := &PositionMap{}
	srcLine, srcCol, srcIdx, name := 0, 0, 0, 0
	for i, l := range lines {
		var segs []Segment
		genCol := 0
		for _, seg := range strings.Split(l, ",") {
			if seg == "" {
				continue
			}
			f, err := decodeVLQ(seg)
			if err != nil {
				return nil, err
			}
			genCol += f[0]
			if len(f) >= 4 {
				srcIdx += f[1]
				srcLine += f[2]
				srcCol += f[3]
				if len(f) >= 5 {
					name += f[4]
				}
				if srcLine >= 1 { // not the wrapper's first line
					segs = append(segs, Segment{GenColumn: genCol, Line: srcLine, Column: srcCol + 1})
				}
			}
		}
		if i == 0 {
			continue // the wrapper's first line
		}
		sort.SliceStable(segs, func(a, b int) bool { return segs[a].GenColumn < segs[b].GenColumn })
		m.lines = append(m.lines, segs)
	}
	return m, nil
}

// decodeVLQ decodes one source-map segment of base64 VLQ numbers.
func decodeVLQ(s string) ([]int, error) {
	var out []int
	value, shift := 0, 0
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", s[i])
		if d < 0 {
			return nil, errors.New("tsstrip: invalid source map character")
		}
		value += (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			if shift > 30 {
				return nil, errors.New("tsstrip: source map number overflows")
			}
			continue
		}
		n := value >> 1
		if value&1 != 0 {
			n = -n
		}
		out = append(out, n)
		value, shift = 0, 0
	}
	if shift != 0 {
		return nil, errors.New("tsstrip: truncated source map number")
	}
	return out, nil
}
