package rlock_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

// exampleAddr is set by TestMain (main_test.go) to a real redis-server.
var exampleAddr = rlock.RlockExampleAddr

func Example() {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{exampleAddr()}, DisableCache: true})
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
	ok, _ := other.TryLock(ctx)
	fmt.Println("free again:", ok)
	_ = other.Unlock(ctx)
	// Output:
	// holding orders:42, token issued: true
	// err: <nil>
	// free again: true
}
