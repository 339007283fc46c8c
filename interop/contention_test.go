//go:build interop

package interop

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// Mixed contention: holders of every library take turns on one lock, each
// counting itself in and out of the critical section in Redis (NAME:inside;
// NAME:overlaps counts entries that found someone inside). No overlap may
// ever be seen, and every entry must have happened.
const (
	contentionRounds = 8
	contentionHold   = 5 * time.Millisecond
)

func TestMixedContentionNeverOverlaps(t *testing.T) {
	for _, kind := range []string{"lock", "write"} {
		t.Run(kind, func(t *testing.T) {
			c := goClient(t)
			rc := srv.Client(t)
			ctx := context.Background()
			name := names(t, java)[0]
			type job struct {
				p   *peer
				tid string
			}
			jobs := []job{{java, tid()}, {java, tid()}}
			if kind == "lock" {
				jobs = append(jobs, job{node, tid()}, job{node, tid()})
			}
			waits := make([]<-chan answer, len(jobs))
			for i, j := range jobs {
				waits[i] = j.p.send(t, "critical", kind, name, j.tid, strconv.Itoa(contentionRounds),
					strconv.FormatInt(contentionHold.Milliseconds(), 10))
			}
			const goWorkers = 3
			errs := make(chan error, goWorkers)
			var wg sync.WaitGroup
			for range goWorkers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- goCritical(ctx, c, rc, kind, name)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			for i, w := range waits {
				if a := jobs[i].p.await(t, w, 2*time.Minute, "critical"); !a.ok {
					t.Fatalf("%s critical section: %s", jobs[i].p.name, a.result)
				}
			}
			count := func(key string) int64 {
				n, _ := redistest.Do(t, rc, "GET", name+":"+key).AsInt64()
				return n
			}
			want := int64((len(jobs) + goWorkers) * contentionRounds)
			if o, e := count("overlaps"), count("entries"); o != 0 || e != want {
				t.Fatalf("overlaps %d (want 0), entries %d (want %d)", o, e, want)
			}
			redistest.Do(t, rc, "DEL", name+":inside", name+":overlaps", name+":entries")
			assertGone(t, name)
		})
	}
}

// goCritical is one redisync holder's share of the contention: its own
// handle (rlock, or rwlock's write side), contentionRounds turns.
func goCritical(ctx context.Context, c *redisync.Client, rc rueidis.Client, kind, name string) error {
	var l redisync.Locker
	if kind == "lock" {
		l = rlock.New(c, name)
	} else {
		l = rwlock.New(c, name).WriteLocker()
	}
	incr := func(key string, by int64) (int64, error) {
		return rc.Do(ctx, rc.B().Incrby().Key(name+":"+key).Increment(by).Build()).AsInt64()
	}
	for range contentionRounds {
		if err := l.Lock(ctx); err != nil {
			return err
		}
		in, err := incr("inside", 1)
		if err == nil && in != 1 {
			_, err = incr("overlaps", 1)
		}
		if err == nil {
			_, err = incr("entries", 1)
		}
		time.Sleep(contentionHold)
		if err == nil {
			_, err = incr("inside", -1)
		}
		if uerr := l.Unlock(ctx); err == nil && uerr != nil {
			err = fmt.Errorf("unlock: %w", uerr)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
