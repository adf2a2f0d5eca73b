package quickjs

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// errWorkerKilled is what an in-process worker's pipes fail with after kill.
var errWorkerKilled = errors.New("worker killed")

// memProcess is a worker running in a goroutine of the host process, connected by pipes.
type memProcess struct {
	inW  *io.PipeWriter
	inR  *io.PipeReader
	outR *io.PipeReader
	outW *io.PipeWriter
	exit chan exitStatus
	once sync.Once
}

// startInProcess starts the worker in a goroutine; now measures its busy time. A panic in
// the engine is contained and reported as a worker error.
func startInProcess(now func() time.Time) *memProcess {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &memProcess{inW: inW, inR: inR, outR: outR, outW: outW, exit: make(chan exitStatus, 1)}
	go func() {
		st := exitStatus{}
		func() {
			defer func() {
				if v := recover(); v != nil {
					st = exitStatus{err: fmt.Errorf("panic: %v", v)}
				}
			}()
			st.code = runWorker(inR, outW, false, now)
		}()
		outW.Close()
		p.exit <- st
	}()
	return p
}

func (p *memProcess) stdin() io.WriteCloser          { return p.inW }
func (p *memProcess) stdout() io.ReadCloser          { return p.outR }
func (p *memProcess) exited() <-chan exitStatus      { return p.exit }
func (p *memProcess) cpuTime() (time.Duration, bool) { return 0, false }

// kill closes both pipes: the worker's reader sees the end of its input and interrupts
// the program, and its writes fail.
func (p *memProcess) kill() {
	p.once.Do(func() {
		p.inW.CloseWithError(errWorkerKilled)
		p.inR.CloseWithError(errWorkerKilled)
		p.outR.CloseWithError(errWorkerKilled)
	})
}
