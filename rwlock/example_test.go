package rwlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rwlock"
)

func Example() {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{rwlock.ServerAddrForExamples()}, DisableCache: true})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	c := redisync.New(rc)
	defer c.Close()
	ctx := context.Background()

	a, b := rwlock.New(c, "catalog"), rwlock.New(c, "catalog")
	_ = a.RLock(ctx)
	ok, _ := b.TryRLock(ctx)
	fmt.Println("two readers:", ok)
	ok, _ = rwlock.New(c, "catalog").TryLock(ctx)
	fmt.Println("writer while they read:", ok)
	fmt.Println("upgrade:", errors.Is(a.Lock(ctx), rwlock.ErrUpgrade))
	_ = a.RUnlock(ctx)
	_ = b.RUnlock(ctx)

	w := rwlock.New(c, "catalog")
	_ = w.Lock(ctx)
	_ = w.RLock(ctx)  // a writer may read
	_ = w.Unlock(ctx) // downgrade: still a reader, other readers may join
	ok, _ = a.TryRLock(ctx)
	fmt.Println("reader after downgrade:", ok)
	_ = a.RUnlock(ctx)
	_ = w.RUnlock(ctx)
	// Output:
	// two readers: true
	// writer while they read: false
	// upgrade: true
	// reader after downgrade: true
}
