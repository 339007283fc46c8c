package torture

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Modes of a proxy.
const (
	pass        = iota // forward both ways
	blackhole          // forward nothing, keep the connections open (a partition)
	dropReplies        // forward requests, swallow replies (answers lost after the server acted)
)

// proxy is a TCP proxy between one worker and the lock server, through which
// the nemesis cuts the network for that worker alone.
type proxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32
	delay  atomic.Int64 // added to every byte forwarded, in ns (a slow link)
	closed atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) set(mode int) { p.mode.Store(int32(mode)) }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(s, c, false)
		go p.pipe(c, s, true)
	}
}

// chunk is what one read returned, and when it is to go out.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies from src to dst, dropping what the mode says; reply is the
// server-to-client direction. A reader stamps each chunk with its due time
// (read time + the link's delay) and a writer sends it then: a slow link
// delays every byte by the same amount, as latency does, without choking
// throughput. Order is kept.
func (p *proxy) pipe(dst, src net.Conn, reply bool) {
	defer p.wg.Done()
	chunks := make(chan chunk, 1024) // full: the reader stalls, TCP pushes back
	p.wg.Add(1)
	go func() { // the reader; awaited through p.wg
		defer p.wg.Done()
		defer close(chunks)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				data := append([]byte(nil), buf[:n]...) // the chunk waits in the channel; buf is reused
				chunks <- chunk{data, time.Now().Add(time.Duration(p.delay.Load()))}
			}
			if err != nil {
				return // EOF or a reset
			}
		}
	}()
	// On the way out (deferred, so last first): stop the reader, let it
	// finish into the channel, close the other side.
	defer dst.Close()
	defer func() {
		for range chunks {
		}
	}()
	defer src.Close()
	for c := range chunks {
		if wait := time.Until(c.due); wait > 0 {
			time.Sleep(wait)
		}
		// A partition delays bytes, it does not lose them: a stream missing
		// a piece in its middle is no fault a network can cause (TCP
		// delivers all of it, in order, or breaks the connection).
		p.holdWhilePartitioned()
		m := p.mode.Load()
		if m == pass || (m == dropReplies && !reply) {
			if _, err := dst.Write(c.data); err != nil {
				return
			}
		}
	}
}

// holdWhilePartitioned waits while the proxy is a blackhole (and not
// closing).
func (p *proxy) holdWhilePartitioned() {
	for p.mode.Load() == blackhole && !p.closed.Load() {
		time.Sleep(2 * time.Millisecond)
	}
}

// reset closes every connection open now (the client sees them break and
// reconnects), and forwards again. After dropReplies, a reset is what keeps
// the byte streams whole: TCP never loses part of a stream and goes on.
func (p *proxy) reset() {
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.set(pass)
}

// close stops the proxy and waits for its goroutines.
func (p *proxy) close() {
	p.closed.Store(true)
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
