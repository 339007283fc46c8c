package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rlock"
)

// Do holds the lock for exactly as long as fn runs, and releases it whatever
// fn returns.
func ExampleDo() {
	// A throw-away redis-server for the example; a program dials its own Redis.
	srv, err := redisynctest.StartServer()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	// DisableCache: redisync sends every command uncached, so rueidis's
	// client-side cache would only cost memory and CLIENT TRACKING.
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	c := redisync.New(rc)
	defer c.Close()
	ctx := context.Background()

	mu := rlock.New(c, "invoices:2026-11")
	err = redisync.Do(ctx, mu, func(ctx context.Context) error {
		// ... write the invoices, each write carrying mu.Token() so that the
		// store can refuse a holder that has been overtaken ...
		return errors.New("printer jammed")
	})
	fmt.Println("do:", err)
	locked, err := rlock.New(c, "invoices:2026-11").IsLocked(ctx)
	fmt.Println("locked afterwards:", locked, err)
	// Output:
	// do: printer jammed
	// locked afterwards: false <nil>
}

// When the lock is lost while fn runs, fn's context ends with the cause
// ErrLockLost, so fn can stop before another holder starts, and Do reports
// the loss.
func ExampleDo_lockLost() {
	// A throw-away redis-server for the example; a program dials its own Redis.
	srv, err := redisynctest.StartServer()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	// DisableCache: redisync sends every command uncached, so rueidis's
	// client-side cache would only cost memory and CLIENT TRACKING.
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	// A lease of one second, renewed every third of it, so that the example
	// notices the loss quickly. Default: 30 s.
	c := redisync.New(rc, redisync.WithWatchdogTimeout(time.Second))
	defer c.Close()
	ctx := context.Background()

	mu := rlock.New(c, "invoices:2026-11")
	err = redisync.Do(ctx, mu, func(ctx context.Context) error {
		// The lock's key vanishes, as after a FLUSHALL or a restart without
		// persistence: the next renewal finds the hold gone.
		if err := rc.Do(ctx, rc.B().Flushall().Build()).Error(); err != nil {
			return err
		}
		<-ctx.Done() // a real fn checks ctx between its writes
		fmt.Println("fn's context ended by the loss:", errors.Is(context.Cause(ctx), redisync.ErrLockLost))
		return ctx.Err()
	})
	fmt.Println("do reports the loss:", errors.Is(err, redisync.ErrLockLost))
	// Output:
	// fn's context ended by the loss: true
	// do reports the loss: true
}
