package engine

import (
	"context"
	"sync"

	"github.com/redis/rueidis"
)

// On a Cluster, rueidis sends a keyless command of a DoMulti (WAIT) to the
// node of the batch's keyed commands, on the same dedicated connection (a
// batch holding a blocking command goes on one connection), so a WAIT
// appended to the scripts of one hash slot counts the replicas of the very
// master that ran them: a per-shard WAIT in the same round trip. A batch
// whose keyed commands span slots cannot carry a keyless command (rueidis
// refuses it: the slots may live on different masters), so such a batch is
// split by slot, each slot's part with a WAIT of its own, sent
// concurrently (one round trip, as one DoMulti would be; a part waits for
// its own master's replicas only).
//
// One case this cannot see: a script answered MOVED or ASK (its slot moved
// to another master between the client's last refresh and the command) is
// sent again by rueidis to the new master, alone, while the WAIT's reply
// still comes from the old node. After a failover the old node is a
// replica or gone, and its WAIT fails (the write counts as not
// replicated: an acquisition is rolled back, a renewal retried); after a
// slot migration (resharding, not failover) it may count the replicas of
// the connection's earlier writes instead.

// spansSlots reports whether cmds' keyed commands span more than one slot.
func spansSlots(cmds []rueidis.Completed) bool {
	first, keyed := uint16(0), false
	for _, c := range cmds {
		if c.Slot() == initSlot {
			continue
		}
		if !keyed {
			first, keyed = c.Slot(), true
		} else if c.Slot() != first {
			return true
		}
	}
	return false
}

// initSlot is rueidis's slot of a command without keys (cmds.InitSlot,
// internal to rueidis: one past the last of Redis's 16384 slots).
const initSlot = 1 << 14

// doMultiBySlot sends cmds split by hash slot: the parts holding scripts
// each with a WAIT, the keyless commands on their own. It returns when
// every part has its replies.
func (r *replicated) doMultiBySlot(ctx context.Context, cmds []rueidis.Completed) []rueidis.RedisResult {
	var order []uint16
	parts := map[uint16][]int{}
	for i, c := range cmds {
		s := c.Slot()
		if _, ok := parts[s]; !ok {
			order = append(order, s)
		}
		parts[s] = append(parts[s], i)
	}
	out := make([]rueidis.RedisResult, len(cmds))
	var wg sync.WaitGroup
	for _, s := range order {
		idx := parts[s]
		part := make([]rueidis.Completed, len(idx))
		for k, i := range idx {
			part[k] = cmds[i]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res []rueidis.RedisResult
			if s == initSlot {
				res = r.Client.DoMulti(ctx, part...)
			} else {
				res = r.doMultiWaited(ctx, part)
			}
			for k, i := range idx {
				out[i] = res[k] // parts fill disjoint entries
			}
		}()
	}
	wg.Wait()
	return out
}
