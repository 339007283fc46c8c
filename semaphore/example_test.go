package semaphore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/semaphore"
)

// A worker pool across processes: however many workers start, at most three
// transcode at once.
func Example_workerPool() {
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

	var running, peak atomic.Int32
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem := semaphore.New(c, "pool:transcode", 3)
			p, err := sem.Acquire(ctx, 1)
			if err != nil {
				panic(err)
			}
			defer p.Release(context.WithoutCancel(ctx))
			n := running.Add(1)
			for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
			}
			// ... transcode, passing p.Token() to anything that must reject stale workers ...
			running.Add(-1)
		}()
	}
	wg.Wait()
	avail, _ := semaphore.New(c, "pool:transcode", 3).Available(ctx)
	fmt.Println("never more than 3 at once:", peak.Load() <= 3)
	fmt.Println("available afterwards:", avail)
	// Output:
	// never more than 3 at once: true
	// available afterwards: 3
}
