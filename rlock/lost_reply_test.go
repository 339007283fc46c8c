package rlock

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
)

// replyDropper is a TCP proxy to a redis-server that can swallow replies
// (the server acts, the client never hears) and then break every
// connection, so the client reconnects and sends again.
type replyDropper struct {
	ln   net.Listener
	drop atomic.Bool
	mu   sync.Mutex
	open []net.Conn
	wg   sync.WaitGroup
}

func newReplyDropper(t *testing.T, target string) *replyDropper {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &replyDropper{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.open = append(p.open, c, s)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); p.copy(s, c, false) }()
			go func() { defer p.wg.Done(); p.copy(c, s, true) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.breakAll(); p.wg.Wait() })
	return p
}

func (p *replyDropper) copy(dst, src net.Conn, replies bool) {
	defer dst.Close()
	buf := make([]byte, 16<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !(replies && p.drop.Load()) {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				src.Close()
			}
			return
		}
	}
}

// breakAll closes every connection and forwards replies again.
func (p *replyDropper) breakAll() {
	p.mu.Lock()
	for _, c := range p.open {
		c.Close()
	}
	p.open = nil
	p.mu.Unlock()
	p.drop.Store(false)
}

// Issue 12, defect 5: a release that ran in Redis but whose reply was lost
// is sent again (the connection broke: a transient error) as the same
// request. With two handles on one owner id, the repeat must not take the
// other handle's hold.
func TestLostReleaseReplyIsRetriedWithoutDecrementingTwice(t *testing.T) {
	e := setup(t)
	p := newReplyDropper(t, e.Srv.Addr())
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.ln.Addr().String()},
		DisableCache: true, ForceSingleClient: true})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	c := redisync.New(rc)
	t.Cleanup(func() { c.Close() })

	// Load the scripts first: a NOSCRIPT reply swallowed would stall the
	// EVALSHA-then-EVAL fallback instead of the release itself.
	warm := New(c, "mutex:lost-reply:warm", WithOwner("svc:9"))
	require.NoError(t, warm.Lock(bg()))
	require.NoError(t, warm.Unlock(bg()))

	const name = "mutex:lost-reply"
	a := New(c, name, WithOwner("svc:9"))
	b := New(e.C, name, WithOwner("svc:9")) // another process, straight to the server
	require.NoError(t, a.Lock(bg()))
	require.NoError(t, b.Lock(bg()))
	count := func() int64 {
		n, err := e.Do(t, "HGET", name, "svc:9").AsInt64()
		if rueidisNil(err) {
			return 0
		}
		require.NoError(t, err)
		return n
	}
	require.EqualValues(t, 2, count())

	p.drop.Store(true)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), time.Minute)
		defer cancel()
		got <- a.Unlock(ctx)
	}()
	// Nothing holds the release back: it goes out at once (a few ms here)
	// and only scheduling delays it, which a loaded make test stretched
	// past 5 s once. So the bound is generous, and what the release did is
	// checked as soon as it did anything: a count of 0 is the double
	// decrement this test is about, reported as such.
	eventually(t, 30*time.Second, func() bool { return count() != 2 }, "the release ran in Redis")
	require.EqualValues(t, 1, count(), "the first send of the release took both holds")
	time.Sleep(50 * time.Millisecond)
	p.breakAll() // the reply is gone for good; the client sees the connection break
	require.NoError(t, <-got, "the repeated release replays the first one's outcome")
	assert.EqualValues(t, 1, count(), "b's hold survives the repeat")
	assert.NoError(t, b.Err())
	require.NoError(t, b.Unlock(bg()))
	assert.False(t, e.Exists(t, name), "%s", e.Describe(t))
}
