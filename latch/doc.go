// Package latch is a distributed countdown latch on Redisson's
// RCountDownLatch layout: one party sets a count, others count it down,
// and every waiter, in any process, returns when it reaches zero. Go and
// Java (Redisson) services share latches by name.
//
//	l := latch.New(c, "batch:42:shards")
//	if _, err := l.TrySetCount(ctx, 8); err != nil { ... } // once, by the coordinator
//	...
//	err := l.CountDown(ctx)   // each shard, when done
//	...
//	err := l.Await(ctx)       // anyone: blocks until the count is zero
//
// A Latch is a name, not an owner: it holds no state and no lease, so any
// handle (or Redisson client) on the name may set, count down, read, await
// or delete it, and goroutines may share one handle freely. Nothing renews
// or expires a latch: a count never brought to zero stays in Redis until
// someone deletes it (as in Redisson).
//
// # Semantics
//
//   - TrySetCount(n) creates the latch only when none exists (a key is
//     there until the count reaches zero or Delete): (false, nil) means
//     someone else set it, and the count is theirs. A latch that reached
//     zero can be set again; waiters that already returned do not wait
//     again.
//   - CountDown decrements. At zero the key is deleted and every waiter is
//     released. Counting down an open latch does nothing.
//   - Count reads the count (0: open).
//   - Await returns when the count is zero or the key is gone — however
//     that happened (a CountDown, Delete, a raw DEL, FLUSHDB, expiry
//     someone set) — or when ctx ends (ctx.Err(), unwrapped). A latch never
//     set is open, so Await returns at once: set the count before anyone may
//     wait, as with sync.WaitGroup.Add before Wait.
//   - Delete opens the latch whatever its count and reports whether there
//     was one.
//
// # Errors
//
// A count outside 1..MaxCount is ErrInvalidCount, before any I/O. A name
// that cannot be used (see New) is redisync.ErrInvalidName from every
// method. A key under the name that is not a latch — a hash (a lock, a
// semaphore, a user's), a list, a string that is no integer — is reported
// as a *redisync.WrongKindError (errors.Is(err, redisync.ErrWrongKind)) and
// never overwritten or deleted; a string holding an integer cannot be told
// from a latch and is taken for one. After Client.Close every method
// returns redisync.ErrClosed. Redis and transport errors name the latch and
// the operation.
//
// # How it works
//
// For a latch named N (exactly Redisson 4.7.0's layout and messages):
//
//  1. The latch is the string key N holding the count in decimal, with no
//     expiry. No key means count zero.
//  2. Its channel is "redisson_countdownlatch__channel__{N}" — for every
//     name: unlike its lock channels, Redisson adds the braces even when N
//     has some. For a name without '}' the channel's hash tag is N itself,
//     in N's slot ("a{b" too); a name with a '}' ("{t}x": channel tag "{t")
//     gets its channel in another Cluster slot, so New refuses such names
//     on a Cluster (a single server and Sentinel take any name). PUBLISH,
//     or SPUBLISH on a Cluster.
//  3. TrySetCount runs latch_try_set_count.lua: if N is absent, SET N n and
//     publish "1" (Redisson's new-count message); else nothing.
//  4. CountDown runs latch_count_down.lua: DECR N; at or below zero DEL N;
//     at exactly zero publish "0" (the zero-count message).
//  5. Count runs latch_count.lua (GET, checking the key's shape).
//  6. Delete runs latch_delete.lua: DEL N and, if there was a latch,
//     publish "0". Here we differ from Redisson on purpose: its delete
//     publishes "1", on which a Redisson await does not re-check, so a Java
//     waiter sleeps on after a Redisson delete until its timeout or the
//     next "0" (interop TestLatchRedissonDeleteLeavesRedissonAwaitAsleep);
//     our "0" makes Java's and Go's waiters re-check, find the count zero
//     and return. Our waiters re-check on any message, "1" included.
//  7. Await checks the count; if it is not zero it joins the Client's
//     subscription of the channel (one per channel per Client, shared by
//     every local waiter; every message wakes them all), waits until the
//     subscription is confirmed, and then checks again after every message
//     and at least every poll interval. Redisson's waiters wake on "0" from
//     either library; ours on any message from either.
//
// Every script checks the key's shape before it writes, and on Redis 7
// that the user's ACL allows each write (a denied command is a NOPERM
// error naming it, with nothing written).
package latch
