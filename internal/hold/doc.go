// Package hold is the hold of one lock handle: the state machine every lock
// handle shares (rlock, fairlock, both sides of rwlock, semaphore permits,
// redlock), with the primitive supplying its acquire, release and renew
// scripts. A semaphore Permit is a hold of count one whose acquire is
// sem_acquire.lua. A redlock acquires through AttemptOwn — its quorum round
// settles its own nodes' replies — and keeps its count here only
// (LocalCount): its release goes to every node. A multilock drives its
// components' holds (AttemptAll for a one-script round) and shares the
// Gate, but keeps a small hold of its own: see the multilock package doc
// for why.
//
// A Hold knows how many holds its handle has (each Lock granted adds one,
// each Unlock removes one), the fencing token, the Done channel and the
// watchdog registration of the current hold. It runs a primitive's acquire
// script through Attempt and its release script through Unlock, and makes
// both safe against lost replies, cancellation and owners that several
// handles share:
//
//   - an acquire is never abandoned in flight (its reply, one round trip,
//     decides what to undo); a grant the caller no longer wants — or whose
//     lease had already run out by the local clock when the reply came — is
//     undone with an owner-checked release that acts only on what that
//     acquire did. A call whose ctx ended waits for that undo (a Client
//     task) for at most engine.UndoWait, so it has landed when the call
//     returns unless the server does not answer; then the task sends it
//     again until the server does, while the grant's lease lasts
//     (engine.Persist);
//   - Unlock always releases: it ends the hold locally at once (renewal
//     stops, Done closes) and queues the release, whatever ctx says. The
//     last Unlock ends the hold in the same step as the count that drops
//     to zero, so a grant that another goroutine sharing the handle gets
//     afterwards starts a hold of its own, never joins the ending one. ctx
//     bounds only how long Unlock waits for the reply; when it ends first,
//     a Client task finishes the release, sending it again until the
//     server answers or the lease would have ended the hold anyway
//     (engine.Persist), and Client.Close waits for it (then gives it up). The handle's queued releases always reach Redis before its next
//     acquire, in order;
//   - a release whose reply never came stays queued and is re-sent, as the
//     same request, before the handle's next operation; it never
//     decrements twice;
//   - a hold the watchdog reports lost closes Done, and the next Unlock
//     removes whatever is left of it — of an owner other handles share,
//     this handle's holds only — and reports the loss. A reentrant handle
//     locked again before that Unlock nests past the lost hold: the new
//     hold's Unlocks come first, then the lost hold's, which reports the
//     loss (Hold.unreported);
//   - an Unlock releases only what this handle's own acquisitions were
//     granted: on a handle with no hold (also while its first acquire is
//     in flight) it is ErrNotHeld and sends nothing.
//
// # Idempotent release, with shared owners
//
// An owner used by one handle only (the default: a drawn owner id) has a
// count in Redis that only this handle changes, one operation at a time, so
// each release names the count it expects: a repeated release finds one
// less and does nothing, and the undo of an acquire acts only if the count
// is one more than before it.
//
// An owner id given with WithOwner may be shared by several handles (or a
// Redisson client), and their counts mix, so expectations prove nothing:
// "one less than I expected" may be another handle's release. Such a handle
// has a latch: a field "redisync:latch:<handle id>" of the lock hash, where
// each of its acquires and releases leaves its request id and outcome (a
// handle's operations are serialized, so one field per handle suffices). A
// retried release finds its own request there and replays the recorded
// outcome instead of decrementing again; the undo of an acquire acts only
// if that very acquire left its mark, and marks it undone so the acquire,
// if it is still on its way, refuses. Every release also carries the
// hold's fencing token, so it never acts on a later hold of the same owner.
// Each handle releases exactly its own holds. A handle's latch field goes
// with the release that ends its last hold (the other handles' holds live
// on: the hash holds a field per handle that holds, not per handle ever
// used), and all of them with the hash; Redisson's scripts ignore them. A
// retry of that release finds no latch while the lock still carries the
// hold's token, and knows that its first send ran.
//
// The owner's count in Redis is then the sum of its handles' holds, and the
// key's lease the latest any of them set; each handle's hold ends by its own
// lease (the watchdog judges it alone). When one handle's hold is lost, the
// cleanup Unlock removes as many holds as that handle had (ReleaseArgs.Holds),
// guarded by the token: the other handles' holds, and the key, live on.
package hold
