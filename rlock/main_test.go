package rlock

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/redistest"
)

// exampleAddr is a server shared by the Examples (they cannot start their own).
var exampleAddr string

func TestMain(m *testing.M) {
	s, err := redistest.StartMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exampleAddr = s.Addr()
	code := m.Run()
	s.Kill()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// env is one test's server, rueidis client and redisync Client.
type env struct {
	srv *redistest.Server
	rc  rueidis.Client
	c   *redisync.Client
}

func setup(t *testing.T, opts ...redisync.Option) *env {
	t.Helper()
	srv := redistest.Start(t)
	rc := srv.Client(t)
	c := redisync.New(rc, opts...)
	t.Cleanup(func() { c.Close() })
	return &env{srv: srv, rc: rc, c: c}
}

// client returns one more redisync Client on the same server (another "process").
func (e *env) client(t *testing.T, opts ...redisync.Option) *redisync.Client {
	rc := e.srv.Client(t)
	c := redisync.New(rc, opts...)
	t.Cleanup(func() { c.Close() })
	return c
}

func (e *env) do(t *testing.T, args ...string) rueidis.RedisResult {
	t.Helper()
	return redistest.Do(t, e.rc, args...)
}

func (e *env) exists(t *testing.T, key string) bool {
	n, err := e.do(t, "EXISTS", key).AsInt64()
	require.NoError(t, err)
	return n == 1
}

func (e *env) pttl(t *testing.T, key string) int64 {
	n, err := e.do(t, "PTTL", key).AsInt64()
	require.NoError(t, err)
	return n
}

func (e *env) dbsize(t *testing.T) int64 {
	n, err := e.do(t, "DBSIZE").AsInt64()
	require.NoError(t, err)
	return n
}

// subscribe records every message published on channel until the test ends.
func (e *env) subscribe(t *testing.T, channel string) <-chan string {
	t.Helper()
	rc := e.srv.Client(t)
	msgs := make(chan string, 1024)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		once := false
		hctx := rueidis.WithOnSubscriptionHook(ctx, func(rueidis.PubSubSubscription) {
			if !once {
				once = true
				close(ready)
			}
		})
		_ = rc.Receive(hctx, rc.B().Subscribe().Channel(channel).Build(), func(m rueidis.PubSubMessage) { msgs <- m.Message })
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("subscription not confirmed")
	}
	return msgs
}

func eng(c *redisync.Client) *engine.Engine { return engine.FromClient(c) }

// eventually polls cond every 5 ms until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func bg() context.Context { return context.Background() }

// waitSubscribed waits until some connection is subscribed to channel.
func waitSubscribed(t *testing.T, e *env, channel string) {
	t.Helper()
	eventually(t, 5*time.Second, func() bool {
		vals, err := e.do(t, "PUBSUB", "NUMSUB", channel).ToArray()
		if err != nil || len(vals) != 2 {
			return false
		}
		n, _ := vals[1].AsInt64()
		return n > 0
	}, "waiter subscribed to "+channel)
}

func rueidisNil(err error) bool { return rueidis.IsRedisNil(err) }
