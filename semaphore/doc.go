// Package semaphore is a distributed counting semaphore of leased,
// identified permits: "at most N workers across the fleet do X at once",
// without Redisson's leak of permits held by a crashed process.
//
//	sem := semaphore.New(c, "pool:transcode", 8)   // capacity 8, set in Redis on first use
//	p, err := sem.Acquire(ctx, 1)                  // blocks; p holds 1 permit
//	if err != nil { ... }
//	defer p.Release(context.WithoutCancel(ctx))
//	select { case <-p.Done(): /* lost: p.Err() */ default: }
//
// The package name matches golang.org/x/sync/semaphore (an in-process
// semaphore); import one of them under another name when both are needed:
//
//	import (
//		xsem "golang.org/x/sync/semaphore"
//		"github.com/redisync/redisync/semaphore"
//	)
//
// # Permits
//
// Each Acquire(ctx, n) is one acquisition of n permits, recorded in Redis
// with its own id ("<client uuid>:<n>", see Holders) and a lease expiry by
// the server's clock. By default the lease is the Client's watchdog timeout
// and the watchdog renews it every third until Release; WithLease gives a
// fixed lease instead. A holder that crashes, freezes or loses its
// connection stops renewing, and its permits come back when its lease runs
// out: the next script to run (any acquire, release or read) takes them back
// and wakes the first waiter. A Permit's Done closes and its Err matches
// redisync.ErrLockLost when its lease is lost, before Redis can hand its
// permits out again. Release ends the Permit locally at once (renewal
// stops, Done closes) and sends the release whatever ctx says — ctx bounds
// only the wait for the reply, and a Client task finishes the rest — so the
// everyday defer p.Release(ctx) with a request context gives the permits
// back. Release twice is redisync.ErrNotHeld and changes nothing; a release
// whose reply was lost is sent again by the next Release, never releasing
// twice. Acquire never returns a Permit whose lease had already run out by
// the client's clock when the grant came back (a server stall): that grant
// is given back and Acquire goes on waiting. A Permit is one hold in the
// lifecycle every redisync lock shares; each Acquire
// returns its own, so there is no handle for goroutines to share. The
// permits held never exceed the capacity (except transiently after
// SetPermits lowered it, see below). Each Permit has a fencing token,
// strictly greater than every earlier acquisition's.
//
// # Permits as a Locker
//
// Locker(n) returns n permits as a redisync.Locker, for redisync.Do and
// multilock: Lock acquires them, Unlock releases them, and Token, Done and
// Err are those of the Permit held. Such a handle follows the ownership
// model of every lock handle: goroutines that share it exclude each other
// as around a sync.Mutex (a Lock on a handle that holds its permits waits
// for its Unlock), while separate handles — each Locker call returns one —
// compete for permits like separate Acquire calls.
//
//	err := redisync.Do(ctx, pool.Locker(3), func(ctx context.Context) error {
//		return render(ctx) // three of the pool's permits held
//	})
//
// # Capacity
//
// New's capacity is written to Redis by the first call that finds none, and
// from then on the value in Redis wins, so every process agrees. SetPermits
// changes it. Raising it lets waiters in at once. Lowering it revokes
// nothing: current holders keep their permits until they release them or
// their leases run out; meanwhile Available reports 0 and new requests wait
// until the permits held drop below the new capacity. A request for more
// permits than the capacity fails at once with ErrTooMany.
//
// # Fairness
//
// Requests are served in arrival order, as golang.org/x/sync/semaphore does:
// a request is granted only when enough permits are free and no request
// queued before it is still waiting. A large request at the head of the
// queue therefore holds back the small ones behind it until enough permits
// come free, so it is never starved by a stream of small ones — at the
// price that free permits may sit unused while it waits. TryAcquire never
// queues and fails while anyone is waiting. Waiters heartbeat their place as
// fair-lock waiters do (WithWaiterTimeout); a dead waiter's place lapses.
//
// # How it works
//
// For a semaphore named S (all keys share S's hash slot; H is S's hash tag,
// or S itself when it has none: our keys carry the whole name after the
// tag, so "s" and "{s}" are two semaphores):
//
//	S                                  hash: "capacity", "token" (last token issued);
//	                                   no expiry: it is the configuration (DEL it to reset)
//	redisync_sem_holders:{H}:S         zset: permit id -> lease expiry, server ms
//	redisync_sem_permits:{H}:S         hash: permit id -> count, "used" -> their sum
//	redisync_sem_queue:{H}:S           zset: waiting id -> arrival, server µs
//	redisync_sem_heartbeat:{H}:S       zset: waiting id -> heartbeat deadline, server ms
//	redisync_sem_channel:{H}:S:<id>    the waiter's wake-up channel
//
// S is this semaphore's configuration only as a hash without expiry whose
// "capacity" is a count up to 10^15: a lock's hash, a user's key or a
// capacity written by something else (one Lua could not hold exactly) makes
// every method return redisync.ErrWrongKind, and the derived keys must be
// of their type with an expiry. Nothing is written before every key has
// been checked, and a write the ACL denies leaves nothing written: the
// rare paths clear every write command with the ACL first; the common
// acquire (one permit of a semaphore nobody holds or waits for) clears the
// DEL of the holders zset and permits hash, writes those two first and the
// configuration last, and deletes the two again when a write is denied
// (docs/guarantees.md, "Semaphore: ACL checks of the common acquire").
// The waiter channel is no key of the scripts: they name it from the
// queue's key, as the two differ only in their prefix.
//
// The holders zset and permits hash are always changed together and given
// the same expiry, five leases after its last write (an acquire, or a
// renewal once in four leases), so when every holder is gone they vanish
// together, at most five leases after its permits came back; the queue
// zsets expire with their waiters.
//
// Every script first takes back expired holders (ZRANGEBYSCORE on the
// holders zset; their counts are subtracted from "used") and drops dead
// waiters. Acquire (sem_acquire.lua) grants when capacity − used ≥ n and the
// queue is empty or headed by this request: HSET the count, HINCRBY used,
// ZADD the expiry, and a new token from the hybrid logical clock (server
// TIME in µs, above the last token). If permits are still free it wakes the
// new head. Otherwise a waiting Acquire joins the queue (or heartbeats its
// place) and gets a hint: the time until the first holder's lease runs out.
// Release (sem_release.lua) removes the id (nothing if it is already gone),
// and PUBLISHes "0" (SPUBLISH on a Cluster) on the first waiter's channel;
// the release of a permit the permits hash counts alone, with nobody
// waiting, is one DEL of both keys (docs/guarantees.md, "Semaphore: the
// common release").
// The watchdog renews many permits with one sem_renew.lua per hash slot (a
// ZADD XX GT CH each); a permit taken back once it expired is never
// revived. A cancelled Acquire returns within
// redisync.UndoWait of its ctx's end, and leaves the semaphore as it was:
// its acquire in flight is never abandoned — a Client task awaits the
// reply, gives back a grant no one wants (sem_release.lua), and only then
// takes the request out of the queue (queue_leave.lua), so the acquire
// cannot queue it again afterwards — and Acquire waits for that task for
// up to UndoWait. Only when the server does not answer within it does
// Acquire return first; the task then sends each undo again, paced and
// jittered, until the server answers (for up to the lease of a grant and
// the waiter timeout of the request; Client.Close gives it up), and until
// it does the permits may show taken or the request queued.
package semaphore
