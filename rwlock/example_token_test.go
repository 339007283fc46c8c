package rwlock_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rwlock"
)

// An RWMutex has the hold surface of every lock: Token, Done and Err of
// its current hold (the write hold while it writes, else its read holds),
// so it can be handed to redisync.Do, which runs under the write lock.
func ExampleRWMutex_Token() {
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
	c := redisync.New(rc)
	defer c.Close()
	ctx := context.Background()

	rw := rwlock.New(c, "catalog")
	fmt.Println("before:", rw.Token(), rw.Err())
	err = redisync.Do(ctx, rw, func(ctx context.Context) error {
		// Pass the token to the resource with every write, so that it can
		// refuse a writer whose hold was lost (see the package doc).
		fmt.Println("writing with a token:", rw.Token() > 0, rw.Err())
		return nil
	})
	fmt.Println("after:", err, rw.Token(), rw.Err())
	// Output:
	// before: 0 redisync: lock not held
	// writing with a token: true <nil>
	// after: <nil> 0 redisync: lock not held
}
