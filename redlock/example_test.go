package redlock_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/redlock"
)

func Example() {
	// Real deployments use three or five independent masters; the example
	// starts one throw-away redis-server and runs three "nodes" as three
	// databases of it, which is only good for showing the API.
	srv, err := redisynctest.StartServer()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	var clients []*redisync.Client
	for db := range 3 {
		// DisableCache: redisync sends every command uncached, so rueidis's
		// client-side cache would only cost memory and CLIENT TRACKING.
		rc, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{srv.Addr()}, SelectDB: db, DisableCache: true,
		})
		if err != nil {
			panic(err)
		}
		defer rc.Close()
		c := redisync.New(rc)
		defer c.Close()
		clients = append(clients, c)
	}
	ctx := context.Background()
	mu := redlock.New(clients, "payments:batch")
	if err := mu.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("held on a quorum, token issued:", mu.Token() > 0)
	fmt.Println("unlock:", mu.Unlock(ctx))
	// Output:
	// held on a quorum, token issued: true
	// unlock: <nil>
}
