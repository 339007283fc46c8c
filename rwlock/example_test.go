package rwlock_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rwlock"
)

func Example() {
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

	// One handle per reader or writer, as with one goroutine per sync.RWMutex
	// user.
	a, b, w := rwlock.New(c, "catalog"), rwlock.New(c, "catalog"), rwlock.New(c, "catalog")
	if err := a.RLock(ctx); err != nil {
		panic(err)
	}
	ok, err := b.TryRLock(ctx)
	fmt.Println("two readers:", ok, err)
	ok, err = w.TryLock(ctx)
	fmt.Println("writer while they read:", ok, err)
	fmt.Println("readers leave:", a.RUnlock(ctx), b.RUnlock(ctx))

	ok, err = w.TryLock(ctx)
	fmt.Println("writer once they left:", ok, err)
	ok, err = a.TryRLock(ctx)
	fmt.Println("reader while it writes:", ok, err)
	fmt.Println("writer leaves:", w.Unlock(ctx))
	// Output:
	// two readers: true <nil>
	// writer while they read: false <nil>
	// readers leave: <nil> <nil>
	// writer once they left: true <nil>
	// reader while it writes: false <nil>
	// writer leaves: <nil>
}
