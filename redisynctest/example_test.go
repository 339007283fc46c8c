package redisynctest_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rlock"
)

// Outside a test, StartServer gives a throw-away server that the caller
// closes. (In a test: srv := redisynctest.Start(t); c := srv.Client(t).)
func ExampleStartServer() {
	srv, err := redisynctest.StartServer()
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	// redisync sends every command uncached: DisableCache saves the
	// client-side cache's memory and CLIENT TRACKING.
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	c := redisync.New(rc)
	defer c.Close()

	ctx := context.Background()
	mu := rlock.New(c, "reports:daily")
	ok, err := mu.TryLock(ctx)
	fmt.Println("locked:", ok, err)
	fmt.Println("unlocked:", mu.Unlock(ctx))
	// Output:
	// locked: true <nil>
	// unlocked: <nil>
}
