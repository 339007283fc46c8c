// Package multilock holds several locks together, all or none, without the
// deadlocks of acquiring them one by one in whatever order callers choose.
//
//	from, to := rlock.New(c, "{bank}:acct:17"), rlock.New(c, "{bank}:acct:42")
//	mu := multilock.New(from, to)          // any redisync.Locker values
//	err := redisync.Do(ctx, mu, func(ctx context.Context) error {
//		return transfer(ctx, 17, 42, amount) // both accounts locked
//	})
//
// # Guarantees
//
//   - All or nothing: a round that cannot take every component gives back
//     the ones it took before the call returns (also when ctx ends or a
//     component fails); partial holds never outlive a Lock or TryLock call.
//   - Deadlock-free: components are sorted into one canonical order — by
//     lock name, ties kept in the caller's order — and always acquired in it,
//     so multilocks over the same locks passed in different orders cannot
//     wait for each other in a cycle. (A round never waits while it holds a
//     component, so no order could deadlock; the canonical one spares
//     rounds that would fail. Components without a Name method — a Locker
//     of your own — come after the named ones, in the order given.)
//   - One round trip when it can: if every component is an rlock.Mutex on
//     the same Client, and on a Cluster in the same hash slot (use a common
//     hash tag, as "{bank}" above), each round is one script
//     (rlock_acquire_all.lua) that checks every lock before taking any, so
//     it is atomic; Atomic reports it. Otherwise a round is one TryLock per
//     component, in canonical order.
//   - Lock repeats rounds until it holds everything or ctx ends, waiting
//     between rounds with exponential backoff and full jitter (MinBackoff to
//     MaxBackoff, never past the busy lock's remaining lease when known). It
//     does not subscribe to wake-ups: a multilock waiting for a busy
//     component polls. A component error that passes by itself (a
//     connection refused or reset, a server loading or failing over) is
//     retried the same way; one that no retry changes (a key of another
//     kind, NOPERM, the Client's EvictionRefuse) ends Lock at once — the
//     classification every redisync wait uses.
//   - A one-script round is an acquisition of each rlock like its own
//     TryLock: it passes the Client's eviction check first (EvictionRefuse
//     refuses it), and each component's grant is an EventAcquired.
//   - Unlock ends the hold locally first (after the last hold Done closes),
//     then releases every component in reverse canonical order, whatever
//     ctx says, and returns their errors joined, each naming its component.
//     A component whose Unlock only stopped waiting because ctx ended owes
//     nothing: its own hold finishes the release. A component whose Unlock
//     reports a failure (any other error) is remembered: the next Unlock
//     retries it — on a multilock that holds nothing, Unlock
//     then only retries what is owed — and so does the next Lock round
//     before it takes the components again; a retry that finds a component
//     not held counts as done (the earlier release landed). Done closes,
//     and Err matches redisync.ErrLockLost, as soon as any component is
//     lost (a watcher goroutine follows the components' Done channels while
//     the multilock is held; Unlock stops it and waits for it).
//   - An Unlock releases only the multilock's own holds, the rule of every
//     lock handle: it takes its hold before it waits for
//     anything, and on a multilock that holds nothing and owes nothing —
//     also while its Lock's round is in flight — it is ErrNotHeld at once
//     and sends nothing; the hold that round takes stands.
//   - Rounds and releases take turns on one op lock, and
//     every wait for it ends with the waiter's ctx. An Unlock whose ctx ends
//     there hands its releases to the call in progress, which sends them
//     before it gives the op lock back.
//   - Token returns the first component's (canonical order) fencing token.
//     A multilock guards several resources, and each should check its own
//     lock's token: Components()[i].Token().
//
// Components may live on different Clients and servers (for Redlock across
// independent masters, use the redlock package instead: a multilock needs
// every component).
//
// # Ownership: a multilock is a sync.Mutex
//
// Goroutines may share one multilock, and its Lock and Unlock exclude them
// from each other as around a sync.Mutex: a Lock on a multilock that is
// already held — by another goroutine or by the same code path — waits for
// its Unlock (bounded by ctx) before any round; TryLock then reports false
// without I/O. This is the local gate every redisync handle has
// (docs/how-it-works.md). When a round is one script, it also passes each
// component's own gate, as the component's TryLock would: a goroutine that
// locks a component directly while the multilock holds it waits, and a
// component held through its own handle makes the round busy. NewReentrant
// asks for nesting instead: each Lock locks every component once more (the
// components must nest too: WithReentrant or WithOwner) and needs its own
// Unlock.
//
// # Any Locker, nested multilocks included
//
// A component may be any redisync.Locker: rlock, fairlock, an RWMutex or
// either of its sides, a redlock.Mutex, a semaphore's Locker(n), a Locker
// of your own, or another multilock. A nested multilock is one component
// of the outer one: a round of the outer takes it with its TryLock (one
// round of the inner), Unlock releases it with its Unlock, and the outer's
// Done closes when the inner's does, that is when any lock inside is lost.
// A lock may appear once however deep: New panics when a lock is passed
// twice, also through a nested multilock, since a round would wait for
// itself. Locks that are distinct values but one lock in Redis — an
// RWMutex and its WriteLocker, two handles of one name (a transfer from
// account 17 to account 17, where the names come from data) — are
// recognised by name: Lock and TryLock of such a multilock return an error
// matching ErrSameLock that names the lock, at once and without I/O (take
// the one lock instead). Two locks of one name on different deployments
// are refused too; give one of them a Locker of your own without a Name
// method if you mean it.
//
// A component of this module whose every method is refused without I/O —
// its name, owner id, lease or permit count cannot be used
// (redisync.ErrInvalidName, ErrInvalidOwner, ErrInvalidLease,
// semaphore.ErrBadCount) — makes every method of the multilock return
// that error, at once and without I/O, wherever the component sorts: a
// round does not take the components before it (nor find one busy and
// report contention). New learns it through an internal hook of each lock
// package; a Locker of your own is asked nothing.
//
// # Its hold, and why it is not a lock handle's
//
// Every lock handle's hold lifecycle — count, token, Done and Err, watchdog
// registration, loss, and releases that end the hold locally at once, are
// sent whatever ctx says and are re-sent, never twice, after a lost reply —
// is written once, and every lock handle runs it. A multilock uses it
// through its components (each component is such a hold; a one-script round
// drives their holds directly) and shares the gate, but keeps a small
// hold of its own (a count, Done, Err, and the loss watcher) because the
// rest of that lifecycle has nothing to act on here: a multilock has no
// Client (its components may live on several, or be any Locker), so no
// watchdog registration, task owner or observer; it has no lease, and its
// loss is a component's Done closing, not a renewal's reply; and its
// release is the components' Unlocks, each of which already ends its hold
// at once and queues its own release — a queue here would repeat theirs.
// What it adds is the list of components whose Unlock reported an error,
// retried first by the next Unlock and by the next round, and the releases
// handed to the op lock's holder by Unlocks that stopped waiting for it.
package multilock
