package engine

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/scripts"
	"github.com/redisync/redisync/watchdog"
)

// MaxRenewBatch caps the holds renewed by one script call, so one call never
// blocks the server for long (about a millisecond at this size).
const MaxRenewBatch = 256

// BatchRenewer renews holds of one layout for the watchdog: one multi-key
// renewal script per hash slot (all holds together on a single server), at
// most MaxRenewBatch holds per script, every script in one DoMulti — one
// pipelined round trip per node.
type BatchRenewer struct {
	e      *Engine
	script *scripts.RenewScript
	layout string // for events: "lock", "rwlock", "semaphore"
}

// RenewTarget is a watchdog.Lease's Target for a BatchRenewer.
type RenewTarget struct {
	Item    scripts.RenewItem
	LeaseMs string
}

// Renew implements watchdog.Renewer.
func (r *BatchRenewer) Renew(ctx context.Context, leases []*watchdog.Lease) ([]bool, error) {
	type group struct {
		leaseMs string
		slot    uint16
	}
	groups := map[group][]int{}
	for i, l := range leases {
		t := l.Target.(*RenewTarget)
		g := group{leaseMs: t.LeaseMs}
		if r.e.Cluster {
			g.slot = keys.Slot(t.Item.Key)
		}
		groups[g] = append(groups[g], i)
	}
	var cmds rueidis.Commands
	var parts [][]int
	for g, idx := range groups {
		for start := 0; start < len(idx); start += MaxRenewBatch {
			part := idx[start:min(start+MaxRenewBatch, len(idx))]
			cmds = append(cmds, r.script.Command(r.e.RC, g.leaseMs, items(leases, part)))
			parts = append(parts, part)
		}
	}
	rc := r.e.RC
	alive := make([]bool, len(leases))
	sent := time.Now()
	results := rc.DoMulti(ctx, cmds...)
	for i, res := range results {
		part := parts[i]
		if scripts.IsNoScript(res.Error()) {
			// Script cache flushed (restart, SCRIPT FLUSH): EVAL loads it again.
			res = r.script.Fallback(ctx, rc, leases[part[0]].Target.(*RenewTarget).LeaseMs, items(leases, part))
		}
		ok, err := scripts.ParseRenew(res, len(part))
		if err != nil {
			r.e.Observe(obs.Event{Kind: obs.RenewFailed, Primitive: r.layout, Count: len(leases), Err: err})
			return nil, err
		}
		for j, k := range part {
			alive[k] = ok[j]
		}
	}
	r.e.Observe(obs.Event{Kind: obs.Renewed, Primitive: r.layout, Count: len(leases), Latency: time.Since(sent)})
	return alive, nil
}

func items(leases []*watchdog.Lease, idx []int) []scripts.RenewItem {
	out := make([]scripts.RenewItem, len(idx))
	for i, k := range idx {
		out[i] = leases[k].Target.(*RenewTarget).Item
	}
	return out
}

// Millis formats a duration as the decimal milliseconds scripts expect.
func Millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
