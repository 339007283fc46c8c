package semaphore_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/semaphore"
)

// Permits where a lock is expected: redisync.Do runs the function while
// the Locker holds its permits, and gives them back afterwards, also when
// the function fails or panics. Its context is cancelled if the permits are
// lost.
func ExampleSemaphore_Locker() {
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

	pool := semaphore.New(c, "render-slots", 4)
	job := pool.Locker(3) // a heavy job takes three of the four slots
	err = redisync.Do(ctx, job, func(ctx context.Context) error {
		free, err := pool.Available(ctx)
		fmt.Println("free while rendering:", free, err)
		return nil
	})
	free, _ := pool.Available(ctx)
	fmt.Println("done:", err, "free:", free)
	// Output:
	// free while rendering: 1 <nil>
	// done: <nil> free: 4
}
