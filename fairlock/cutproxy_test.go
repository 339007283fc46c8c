package fairlock

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// cutProxy forwards TCP connections to a server until Cut: then it closes
// its listener and every connection, so a client behind it can neither
// send nor reconnect — a process that died, as far as the server can tell.
// (Closing the client is not that: a rueidis client closed while it dials
// can still send, and a dead waiter then left its queue.)
type cutProxy struct {
	l      net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{l: l, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Cut)
	return p
}

// Addr is the address clients dial instead of the server's.
func (p *cutProxy) Addr() string { return p.l.Addr().String() }

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			down.Close()
			up.Close()
			continue
		}
		p.conns = append(p.conns, down, up)
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(up, down)
		go p.pipe(down, up)
	}
}

func (p *cutProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// Cut closes the listener and every connection, and waits for the
// forwarding goroutines. Idempotent.
func (p *cutProxy) Cut() {
	p.mu.Lock()
	if !p.cut {
		p.cut = true
		p.l.Close()
		for _, c := range p.conns {
			c.Close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}
