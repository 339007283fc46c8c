package rlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

type ctxNameKey struct{}

// ctxChecker is a rueidis.Client that checks, for every command sent on a
// lock's name, that the context it is sent with carries that name (or no
// name: the watchdog's), so that a context of one call seen by another
// call's command shows.
type ctxChecker struct {
	rueidis.Client
	bad  atomic.Int64
	seen atomic.Int64
	mu   sync.Mutex
	what []string
}

func (c *ctxChecker) check(ctx context.Context, cmd rueidis.Completed) {
	v, _ := ctx.Value(ctxNameKey{}).(string)
	if v == "" {
		return
	}
	c.seen.Add(1)
	args := cmd.Commands()
	for _, a := range args {
		if strings.Contains(a, "ctxleak:") {
			if !strings.Contains(a, v) {
				c.bad.Add(1)
				c.mu.Lock()
				if len(c.what) < 5 {
					c.what = append(c.what, fmt.Sprintf("ctx of %s sent %v", v, args))
				}
				c.mu.Unlock()
			}
			return
		}
	}
}

func (c *ctxChecker) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.check(ctx, cmd)
	return c.Client.Do(ctx, cmd)
}

func (c *ctxChecker) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	for _, cmd := range cmds {
		c.check(ctx, cmd)
	}
	return c.Client.DoMulti(ctx, cmds...)
}

// TestNoCallSendsWithAnotherCallsContext: handles of their own names, and
// handles sharing an owner on one name, Lock and Unlock concurrently with
// cancellable contexts, some of which end in flight (their acquires are
// settled and undone by Client tasks on the reused detached contexts):
// every command sent for a name goes with a context of a call on that name.
func TestNoCallSendsWithAnotherCallsContext(t *testing.T) {
	srv := redistest.Start(t)
	cc := &ctxChecker{Client: srv.Client(t)}
	c := redisync.New(cc)
	t.Cleanup(func() { c.Close() })
	var wg sync.WaitGroup
	end := time.Now().Add(3 * time.Second)
	for g := range 8 {
		name := fmt.Sprintf("ctxleak:%d:", g)
		var opts []Option
		if g >= 6 { // two handles sharing an owner on one name
			name = "ctxleak:shared:"
			opts = append(opts, WithOwner("shared-owner"))
		}
		m := New(c, name, opts...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				base := context.WithValue(context.Background(), ctxNameKey{}, name)
				ctx, cancel := context.WithCancel(base)
				if rand.IntN(4) == 0 {
					ctx, cancel = context.WithTimeout(base, time.Duration(rand.IntN(300))*time.Microsecond)
				}
				if m.Lock(ctx) == nil {
					uctx, ucancel := context.WithCancel(base)
					if rand.IntN(4) == 0 {
						uctx, ucancel = context.WithTimeout(base, time.Duration(rand.IntN(300))*time.Microsecond)
					}
					_ = m.Unlock(uctx)
					ucancel()
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	require.Positive(t, cc.seen.Load())
	require.Zero(t, cc.bad.Load(), "%v", cc.what)
}
