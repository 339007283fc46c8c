package rlock_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rlock"
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
	mu := rlock.New(c, "orders:42")
	err = redisync.Do(ctx, mu, func(ctx context.Context) error {
		fmt.Println("holding orders:42, token issued:", mu.Token() > 0)
		return nil
	})
	fmt.Println("err:", err)

	other := rlock.New(c, "orders:42")
	ok, err := other.TryLock(ctx)
	fmt.Println("free again:", ok, err)
	fmt.Println("unlock:", other.Unlock(ctx))
	// Output:
	// holding orders:42, token issued: true
	// err: <nil>
	// free again: true <nil>
	// unlock: <nil>
}
