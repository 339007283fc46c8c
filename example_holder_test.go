package redisync_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rlock"
)

// Every hold that lasts records who took it, with its first renewal (a
// third of the lease after the grant); any lock kind's Holders shows it, so
// an operator can tell a live holder from one that is gone before forcing
// an unlock.
func ExampleHolderInfo() {
	// A throw-away redis-server for the example; a program dials its own Redis.
	srv, err := redisynctest.StartServer()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	// A short lease, so the record comes soon (the default 30 s lease
	// records a hold 10 s after the grant).
	c := redisync.New(rc, redisync.WithLabel("nightly invoices"), redisync.WithWatchdogTimeout(900*time.Millisecond))
	defer c.Close()
	ctx := context.Background()

	mu := rlock.New(c, "invoices:2026-11")
	if err := mu.Lock(ctx); err != nil {
		panic(err)
	}
	defer mu.Unlock(context.WithoutCancel(ctx))

	var holders []redisync.Holder
	for len(holders) == 0 || holders[0].Info == nil { // until the record is written
		time.Sleep(50 * time.Millisecond)
		holders, err = rlock.New(c, "invoices:2026-11").Holders(ctx)
		if err != nil {
			panic(err)
		}
	}
	for _, h := range holders {
		fmt.Println("count:", h.Count, "label:", h.Info.Label, "this process:", h.Info.PID == os.Getpid())
	}
	// Output:
	// count: 1 label: nightly invoices this process: true
}
