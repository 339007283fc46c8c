package multilock_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rlock"
)

// A transfer locks both accounts. Two transfers in opposite directions lock
// them in the same canonical order, so they cannot deadlock.
func Example_transfer() {
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

	balances := map[string]int{"17": 100, "42": 0}
	transfer := func(from, to string, amount int) error {
		mu := multilock.New(
			rlock.New(c, "{bank}:acct:"+from),
			rlock.New(c, "{bank}:acct:"+to),
		)
		return redisync.Do(ctx, mu, func(ctx context.Context) error {
			balances[from] -= amount
			balances[to] += amount
			return nil
		})
	}
	fmt.Println(transfer("17", "42", 30), transfer("42", "17", 10))
	fmt.Println(balances["17"], balances["42"])
	// Output:
	// <nil> <nil>
	// 80 20
}
