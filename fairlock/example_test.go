package fairlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/redisynctest"
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

	first := fairlock.New(c, "jobs:nightly")
	if err := first.Lock(ctx); err != nil {
		panic(err)
	}
	firstToken := first.Token()
	second := fairlock.New(c, "jobs:nightly")
	granted := make(chan struct{})
	go func() {
		_ = second.Lock(ctx) // joins the queue
		close(granted)
	}()
	for q, _ := first.Queue(ctx); len(q) == 0; q, _ = first.Queue(ctx) {
		time.Sleep(time.Millisecond) // until second has joined the queue
	}
	late := fairlock.New(c, "jobs:nightly")
	ok, _ := late.TryLock(ctx) // never queues, and never jumps the queue
	fmt.Println("late comer got it:", ok)

	_ = first.Unlock(ctx) // wakes the head of the queue only
	<-granted
	fmt.Println("second holds it, token rose:", second.Token() > firstToken)
	_ = second.Unlock(ctx)
	// Output:
	// late comer got it: false
	// second holds it, token rose: true
}
