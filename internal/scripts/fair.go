package scripts

import (
	"context"
	_ "embed"

	"github.com/redis/rueidis"
)

var (
	//go:embed fair_acquire.lua
	fairAcquireSrc string
	//go:embed fair_release.lua
	fairReleaseSrc string
	//go:embed fair_force_unlock.lua
	fairForceUnlockSrc string
	//go:embed queue_leave.lua
	queueLeaveSrc string

	fairAcquire = newScript(fairAcquireSrc)
	fairRelease = newScript(fairReleaseSrc)
	queueLeave  = newScript(queueLeaveSrc)
	fairForce   = newScript(fairForceUnlockSrc)
)

// FairKeys names the keys of one fair lock.
type FairKeys struct {
	Lock       string // the hash (lock layout), named by the raw lock name
	Queue      string // zset owner -> arrival
	Heartbeats string // zset owner -> heartbeat deadline
	Token      string // last-token key
	Channel    string // waiter channel prefix: waiter O listens on Channel + ":" + O
	// Info and Holder: the holder-info hash and what an acquire records
	// there, as in LockKeys.
	Info, Holder string
}

func (k *FairKeys) list() []string {
	keys := []string{k.Lock, k.Queue, k.Heartbeats, k.Token, k.Channel}
	if k.Info != "" {
		keys = append(keys, k.Info)
	}
	return keys
}

// WaiterChannel is the channel on which owner is told it heads the queue of
// a free lock.
func (k *FairKeys) WaiterChannel(owner string) string { return k.Channel + ":" + owner }

// FairAcquireLatched runs fair_acquire.lua. waiterTimeoutMs "0" makes one
// attempt without joining the queue (TryLock). l is the handle's latch (see
// LockAcquireLatched).
func FairAcquireLatched(ctx context.Context, c rueidis.Client, k *FairKeys, leaseMs, owner string, nonReentrant bool, waiterTimeoutMs, publish string, l Latch) (Acquired, error) {
	args := trimDefaults([]string{leaseMs, owner, flag(nonReentrant), waiterTimeoutMs, publish, l.Field, l.Req, ""}, 5, "", "", "")
	return parseAcquired(fairAcquire.Exec(ctx, c, k.unrecorded().list(), args))
}

// FairReleaseWith runs fair_release.lua with every argument of ReleaseArgs.
func FairReleaseWith(ctx context.Context, c rueidis.Client, k *FairKeys, owner, leaseMs, publish string, a ReleaseArgs) (Released, error) {
	return parseReleased(fairRelease.Exec(ctx, c, k.releasing(a).list(), a.argv(owner, leaseMs, publish)))
}

// QueueLeave runs queue_leave.lua for the wait queue (queue, heartbeats,
// channel prefix): it reports whether id was queued.
func QueueLeave(ctx context.Context, c rueidis.Client, queue, heartbeats, channel, id, publish string) (bool, error) {
	n, err := queueLeave.Exec(ctx, c, []string{queue, heartbeats, channel}, []string{id, publish}).AsInt64()
	return n == 1, err
}

// FairForceUnlock runs fair_force_unlock.lua: it reports whether a lock was deleted.
func FairForceUnlock(ctx context.Context, c rueidis.Client, k *FairKeys, publish string) (bool, error) {
	n, err := fairForce.Exec(ctx, c, k.list(), []string{publish}).AsInt64()
	return n == 1, err
}

// releasing is k as release a is given it: without the holder-info hash
// when the hold wrote no record.
func (k *FairKeys) releasing(a ReleaseArgs) *FairKeys {
	if a.Unrecorded {
		return k.unrecorded()
	}
	return k
}

// unrecorded is k without its holder-info hash: acquires record nothing
// (holder records come with the first renewal: internal/engine, record.go).
func (k *FairKeys) unrecorded() *FairKeys {
	u := *k
	u.Info = ""
	return &u
}
