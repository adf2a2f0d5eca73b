package shell

import (
	"os"
	"strings"
	"sync"
	"unicode/utf8"
)

// Stream is the captured output of one stream of a finished command: the tail kept in
// memory and, when that tail is not the whole stream, the spill file holding all of it.
type Stream struct {
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"`
	SpillPath string `json:"spillPath,omitzero"`
}

// collector captures one output stream. It keeps the last max bytes in memory; from the
// first byte over max on, the whole stream also goes to a spill file, which is abandoned
// (and removed) once the stream outgrows maxSpill. It is safe for concurrent use: the
// process writes while a background reader reads.
type collector struct {
	max      int
	maxSpill int64
	dir      func() (string, error) // the spill directory, created on demand
	label    string

	mu        sync.Mutex
	buf       []byte // the tail is buf[len(buf)-min(len(buf),max):]
	total     int64  // bytes ever written
	dropped   bool   // the tail no longer holds the whole stream
	spill     *os.File
	spillPath string
	noSpill   bool // spilling failed or was abandoned
	sealed    bool

	tee func([]byte) // receives every write as it arrives (live output); nil for none
}

func newCollector(max int, maxSpill int64, dir func() (string, error), label string) *collector {
	return &collector{max: max, maxSpill: maxSpill, dir: dir, label: label, noSpill: maxSpill <= 0 || dir == nil}
}

// Write captures p, then passes it to the tee. It never fails: capture problems only lose
// the spill file.
func (c *collector) Write(p []byte) (int, error) {
	if c.tee != nil {
		defer c.tee(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sealed {
		return len(p), nil
	}
	over := c.total+int64(len(p)) > int64(c.max)
	c.total += int64(len(p))
	if !c.noSpill && (over || c.spill != nil) {
		c.spillLocked(p)
	}
	c.buf = append(c.buf, p...)
	if len(c.buf) > c.max {
		c.dropped = true
		if len(c.buf) > 2*c.max {
			keep := c.buf[len(c.buf)-c.max:]
			if cap(c.buf) > 4*c.max {
				// One large write grew the buffer: do not keep that memory.
				c.buf = append(make([]byte, 0, 2*c.max), keep...)
			} else {
				c.buf = c.buf[:copy(c.buf, keep)]
			}
		}
	}
	return len(p), nil
}

func (c *collector) spillLocked(p []byte) {
	if c.total > c.maxSpill {
		c.abandonSpillLocked()
		return
	}
	if c.spill == nil {
		dir, err := c.dir()
		if err != nil {
			c.noSpill = true
			return
		}
		f, err := os.CreateTemp(dir, "bash-*-"+c.label+".log")
		if err != nil {
			c.noSpill = true
			return
		}
		c.spill, c.spillPath = f, f.Name()
		// Nothing was dropped yet: buf is the whole stream before p.
		if _, err := f.Write(c.buf); err != nil {
			c.abandonSpillLocked()
			return
		}
	}
	if _, err := c.spill.Write(p); err != nil {
		c.abandonSpillLocked()
	}
}

// abandonSpillLocked stops spilling and removes a file that can no longer hold the whole
// stream.
func (c *collector) abandonSpillLocked() {
	c.noSpill = true
	if c.spill != nil {
		c.spill.Close()
		os.Remove(c.spillPath)
	}
	c.spill, c.spillPath = nil, ""
}

// seal closes the spill file once the stream has ended. A failed close stops advertising
// the file, which may lack its tail.
func (c *collector) seal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealed = true
	if c.spill != nil {
		if err := c.spill.Close(); err != nil {
			os.Remove(c.spillPath)
			c.spillPath = ""
		}
		c.spill = nil
	}
}

func (c *collector) tailLocked() []byte {
	return c.buf[len(c.buf)-min(len(c.buf), c.max):]
}

// result returns the final captured stream.
func (c *collector) result() Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stream{Text: decodeText(c.tailLocked(), c.dropped), Truncated: c.dropped, SpillPath: c.spillPath}
}

// chunk is an incremental read of a stream.
type chunk struct {
	text      string
	next      int64 // the offset to read from next time
	lossy     bool  // bytes since the previous read were dropped from memory
	spillPath string
}

// readFrom returns what was written since offset from. When from has slid out of the
// in-memory tail the read is lossy and returns the whole tail. While the stream is open, an
// incomplete UTF-8 sequence at the end is held back for the next read.
func (c *collector) readFrom(from int64) chunk {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := c.tailLocked()
	start := c.total - int64(len(tail))
	lossy := from < start
	if !lossy {
		tail = tail[from-start:]
	}
	next := c.total
	if !c.sealed {
		keep := completePrefix(tail)
		next -= int64(len(tail) - keep)
		tail = tail[:keep]
	}
	return chunk{text: decodeText(tail, lossy), next: next, lossy: lossy, spillPath: c.spillPath}
}

// completePrefix returns the length of b without a trailing incomplete UTF-8 sequence.
func completePrefix(b []byte) int {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if !utf8.RuneStart(c) {
			continue
		}
		if utf8.FullRune(b[len(b)-i:]) {
			return len(b)
		}
		return len(b) - i
	}
	return len(b)
}

// decodeText converts captured bytes to JSON-safe text: a tail that starts inside a character
// loses the partial character, and invalid UTF-8 becomes U+FFFD.
func decodeText(b []byte, cut bool) string {
	if cut {
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
