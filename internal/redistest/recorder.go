package redistest

import (
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
)

// recordBytes is how many leading bytes of each connection a Recorder keeps:
// enough for a TLS record header (0x16 0x03 0x0N) or a RESP command.
const recordBytes = 3

// Recorder is a TCP proxy in front of a server that records the first bytes
// every client sends on every connection, so a test can prove what went out
// on the wire (a TLS handshake starts 0x16 0x03; cleartext RESP starts '*').
type Recorder struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	firsts [][]byte
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewRecorder listens on a free loopback port and forwards every connection
// to target ("host:port"; it need not be up yet). It is closed by t.Cleanup.
func NewRecorder(t testing.TB, target string) *Recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: recorder: %v", err)
	}
	r := &Recorder{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.Close)
	return r
}

// Addr returns "127.0.0.1:port" of the recorder's listener.
func (r *Recorder) Addr() string { return r.ln.Addr().String() }

// Port returns the port of the recorder's listener.
func (r *Recorder) Port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// Firsts returns the first bytes (up to three) of every connection so far
// that sent anything, in the order they arrived.
func (r *Recorder) Firsts() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]byte, len(r.firsts))
	copy(out, r.firsts)
	return out
}

// Close stops accepting, cuts every connection and waits for its goroutines.
func (r *Recorder) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	_ = r.ln.Close()
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *Recorder) accept() {
	defer r.wg.Done()
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", r.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			_ = client.Close()
			_ = server.Close()
			return
		}
		r.conns[client], r.conns[server] = struct{}{}, struct{}{}
		r.mu.Unlock()
		r.wg.Add(2)
		go func() { // server to client
			defer r.wg.Done()
			_, _ = io.Copy(client, server)
			r.drop(client, server)
		}()
		go func() { // client to server, recording its first bytes
			defer r.wg.Done()
			defer r.drop(client, server)
			var first []byte
			buf := make([]byte, 32<<10)
			for {
				n, err := client.Read(buf)
				if n > 0 && len(first) < recordBytes {
					first = append(first, buf[:min(n, recordBytes-len(first))]...)
					if len(first) == recordBytes {
						r.record(first)
					}
				}
				if n > 0 {
					if _, werr := server.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					if len(first) > 0 && len(first) < recordBytes {
						r.record(first)
					}
					return
				}
			}
		}()
	}
}

func (r *Recorder) record(first []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.firsts = append(r.firsts, append([]byte(nil), first...))
}

func (r *Recorder) drop(a, b net.Conn) {
	_ = a.Close()
	_ = b.Close()
	r.mu.Lock()
	delete(r.conns, a)
	delete(r.conns, b)
	r.mu.Unlock()
}

// String names the recorder in failure messages.
func (r *Recorder) String() string { return "recorder :" + strconv.Itoa(r.Port()) + " -> " + r.target }
