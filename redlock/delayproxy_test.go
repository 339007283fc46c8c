package redlock

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
)

// delayProxy forwards TCP connections to a server. The bytes a client sends
// on a connection accepted while slow is set reach the server delay later,
// in order — also after the client has closed the connection, as bytes in
// a kernel buffer or on a slow link do. Connections accepted later are
// fast, so a command sent on a new connection can overtake one sent
// earlier on a slow one: the reordering that an acquire abandoned in
// flight meets when its undo goes out on another connection.
type delayProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	slow   atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newDelayProxy(t *testing.T, target string, delay time.Duration) *delayProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &delayProxy{ln: ln, target: target, delay: delay}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *delayProxy) addr() string { return p.ln.Addr().String() }

// client returns a rueidis client that reaches the server through the proxy.
func (p *delayProxy) client(t *testing.T) rueidis.Client {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.addr()}, DisableCache: true, ForceSingleClient: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func (p *delayProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		delay := time.Duration(0)
		if p.slow.Load() {
			delay = p.delay
		}
		p.wg.Add(2)
		go p.toServer(u, c, delay)
		go func() {
			defer p.wg.Done()
			if _, err := io.Copy(c, u); err != nil {
				io.Copy(io.Discard, u) // the client left: let the server finish
			}
			c.Close()
		}()
	}
}

// toServer forwards what the client sends, each chunk delay after it
// arrived, and half-closes the server side once the client is done.
func (p *delayProxy) toServer(u, c net.Conn, delay time.Duration) {
	defer p.wg.Done()
	type chunk struct {
		at   time.Time
		data []byte
	}
	chunks := make(chan chunk, 1024)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := c.Read(buf)
			if n > 0 {
				chunks <- chunk{time.Now(), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range chunks {
		time.Sleep(time.Until(ch.at.Add(delay)))
		if _, err := u.Write(ch.data); err != nil {
			break
		}
	}
	for range chunks {
	}
	if tc, ok := u.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

func (p *delayProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
