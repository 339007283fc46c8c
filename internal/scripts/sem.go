package scripts

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
)

var (
	//go:embed sem_acquire.lua
	semAcquireSrc string
	//go:embed sem_release.lua
	semReleaseSrc string
	//go:embed sem_state.lua
	semStateSrc string
	//go:embed sem_force_release.lua
	semForceSrc string
	//go:embed sem_renew.lua
	semRenewSrc string

	semAcquire = newScript(semAcquireSrc)
	semRelease = newScript(semReleaseSrc)
	semState   = newScript(semStateSrc)
	semRenew   = newRenewScript(semRenewSrc, false).withoutToken().withExpiry()
	semForce   = newScript(semForceSrc)
)

// SemHorizon is how many leases a semaphore's holders zset and permits
// hash live past the last write of their expiry (lib.lua's SEM_HORIZON):
// after the last holder stops renewing, its permits come back within a
// lease and the two keys are gone within SemHorizon leases.
const SemHorizon = 5

// SemKeys names the keys of one semaphore.
type SemKeys struct {
	Sem        string // hash: capacity, last token (the raw name)
	Holders    string // zset permit id -> expiry
	Permits    string // hash permit id -> count, "used"
	Queue      string // zset waiting id -> arrival
	Heartbeats string // zset waiting id -> deadline
	// Channel is the waiter channel prefix. It is no argument of the
	// scripts: it is Queue with SemChannelPrefix for SemQueuePrefix
	// (lib.lua's sem_channel), as keys.Derived names them.
	Channel string
	// Info and Holder: the holder-info hash (permit id -> who took it) and
	// what an acquire records there, as in LockKeys.
	Info, Holder string
}

// list is the scripts' KEYS but the release's: the configuration, the
// holders, permits, queue and heartbeats, and the holder-info hash if any.
func (k *SemKeys) list() []string {
	keys := []string{k.Sem, k.Holders, k.Permits, k.Queue, k.Heartbeats}
	if k.Info != "" {
		keys = append(keys, k.Info)
	}
	return keys
}

// releaseList is sem_release.lua's KEYS: list without the configuration,
// which a release never reads.
func (k *SemKeys) releaseList() []string {
	keys := []string{k.Holders, k.Permits, k.Queue, k.Heartbeats}
	if k.Info != "" {
		keys = append(keys, k.Info)
	}
	return keys
}

// WaiterPrefix starts the channel on which a waiter is told to try again:
// the prefix followed by the waiter's id.
func (k *SemKeys) WaiterPrefix() string { return k.Channel + ":" }

// SemHorizonMs is SemHorizon leases of leaseMs (a decimal), in ms: the
// expiry an acquire gives the holders zset and permits hash (SemAcquire's
// horizonMs, made once per semaphore, not in the script: a printf of a
// number costs Redis more than a whole command's argument).
func SemHorizonMs(leaseMs string) string {
	ms, err := strconv.ParseInt(leaseMs, 10, 64)
	if err != nil {
		panic("scripts: a lease that is no decimal: " + leaseMs)
	}
	return strconv.FormatInt(SemHorizon*ms, 10)
}

// SemAcquire runs sem_acquire.lua; waiterTimeoutMs "0" makes one attempt
// without queueing; horizonMs is SemHorizonMs of the lease (the script
// takes the lease as a SemHorizon-th of it). Acquired.Count is n when
// granted.
func SemAcquire(ctx context.Context, c rueidis.Client, k *SemKeys, capacity string, n int, id, horizonMs, waiterTimeoutMs, publish string) (Acquired, error) {
	args := trimDefaults([]string{capacity, id, horizonMs, waiterTimeoutMs, strconv.Itoa(n), publish, ""}, 3, "0", "1", "publish", "")
	res, err := parseAcquired(semAcquire.Exec(ctx, c, k.Unrecorded().list(), args))
	if res.OK && res.Count == 1 { // the common path's reply, for one permit
		res.Count = int64(n)
	}
	return res, err
}

// Outcomes of SemRelease.
const (
	SemReleased = 1 // released while its lease ran
	SemExpired  = 2 // released, but its lease had run out
	SemGone     = 0 // no such permit
)

// SemRelease runs sem_release.lua.
func SemRelease(ctx context.Context, c rueidis.Client, k *SemKeys, id, publish string) (int64, error) {
	return semRelease.Exec(ctx, c, k.releaseList(), trimDefaults([]string{id, publish}, 1, "publish")).AsInt64()
}

// SemHolder is one acquisition in a SemState.
type SemHolder struct {
	ID       string
	Permits  int64
	ExpiryMs int64  // server time
	Info     string // its holder-info record ("" for none; SemReadHolders only)
}

// SemState is a semaphore's state as sem_state.lua reports it.
type SemState struct {
	Capacity, Used, Queued int64
	NowMs                  int64 // server time of the reading
	Holders                []SemHolder
}

// SemReadState runs sem_state.lua. setCapacity "" keeps the capacity.
func SemReadState(ctx context.Context, c rueidis.Client, k *SemKeys, capacity, setCapacity, publish string, holders bool) (SemState, error) {
	return semReadState(ctx, c, k, capacity, setCapacity, publish, flag(holders))
}

// SemReadHolders runs sem_state.lua for the holders with their holder-info
// records (SemHolder.Info).
func SemReadHolders(ctx context.Context, c rueidis.Client, k *SemKeys, capacity, publish string) (SemState, error) {
	return semReadState(ctx, c, k, capacity, "", publish, "2")
}

func semReadState(ctx context.Context, c rueidis.Client, k *SemKeys, capacity, setCapacity, publish, holders string) (SemState, error) {
	vals, err := semState.Exec(ctx, c, k.list(), []string{capacity, setCapacity, publish, holders}).ToArray()
	if err != nil {
		return SemState{}, err
	}
	per := 3
	if holders == "2" {
		per = 4
	}
	if len(vals) < 4 || (len(vals)-4)%per != 0 {
		return SemState{}, fmt.Errorf("scripts: unexpected semaphore state reply of %d values", len(vals))
	}
	var st SemState
	for i, dst := range []*int64{&st.Capacity, &st.Used, &st.Queued, &st.NowMs} {
		if *dst, err = vals[i].AsInt64(); err != nil {
			return SemState{}, err
		}
	}
	for i := 4; i < len(vals); i += per {
		var h SemHolder
		if h.ID, err = vals[i].ToString(); err != nil {
			return SemState{}, err
		}
		if h.Permits, err = vals[i+1].AsInt64(); err != nil {
			return SemState{}, err
		}
		if h.ExpiryMs, err = vals[i+2].AsInt64(); err != nil {
			return SemState{}, err
		}
		if per == 4 {
			h.Info, _ = vals[i+3].ToString()
		}
		st.Holders = append(st.Holders, h)
	}
	return st, nil
}

// SemForceRelease runs sem_force_release.lua: it returns how many permits
// were held.
func SemForceRelease(ctx context.Context, c rueidis.Client, k *SemKeys, publish string) (int64, error) {
	return semForce.Exec(ctx, c, k.list(), []string{publish}).AsInt64()
}

// Unrecorded is k without its holder-info hash: acquires record nothing,
// nor releases of permits that wrote no record
// (holder records come with the first renewal: internal/engine, record.go).
func (k *SemKeys) Unrecorded() *SemKeys {
	u := *k
	u.Info = ""
	return &u
}
