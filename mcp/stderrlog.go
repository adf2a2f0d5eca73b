package mcp

import (
	"bytes"
	"io"
	"sync"
)

// stderrSink returns where a stdio server's stderr goes: the bounded tail and, when the host
// has one, the shared log with each line prefixed by the server's name.
func (m *Mount) stderrSink() io.Writer {
	if m.host.opts.StderrLog == nil {
		return m.stderr
	}
	return io.MultiWriter(m.stderr, &prefixWriter{w: m.host.opts.StderrLog, prefix: []byte("[" + m.name + "] "), start: true})
}

// prefixWriter writes lines to w, each starting with prefix. One Write of it produces one
// Write to w, so lines of different servers sharing w do not interleave within a write.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte
	start  bool // the next byte starts a line
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	var out bytes.Buffer
	for len(b) > 0 {
		if p.start {
			out.Write(p.prefix)
			p.start = false
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out.Write(b)
			break
		}
		out.Write(b[:i+1])
		b = b[i+1:]
		p.start = true
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return n, nil
}
