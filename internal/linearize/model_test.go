package linearize

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The sequential specification the histories are checked against: a mutex
// whose holders are owners, each of them the sum of its handles' holds.
//
//   - A Lock or TryLock that succeeds on handle h is a grant: no handle of
//     another owner holds (its holds ended by Unlock or by a loss), and a
//     gated handle (a default handle, shared by goroutines like a
//     sync.Mutex) has no hold of its own, not even a lost one it has not
//     unlocked yet. A grant adds one hold to h; on a handle whose last
//     hold was lost and not yet unlocked (a reentrant one), it nests past
//     it: that loss is owed, reported by an Unlock after the new hold's.
//   - A Lock or TryLock that fails (busy, ctx, an error) changes nothing:
//     liveness is not checked (a lost hold's key may stay until its lease
//     ends on the server, and busy is always allowed).
//   - Lost(h): h's hold ends by loss (its Done closed without an Unlock).
//     Its holds are gone at once — the documented loss rule: Done closes
//     before the lease can run out on the server, so before another owner
//     can be granted through expiry. A Lost of a handle with no hold is
//     one that its Unlock already reported (below) and changes nothing.
//   - Unlock(h) returns nil when h had a hold (one fewer); ErrLockLost when
//     h's last hold was lost and not yet unlocked (cleared), when h had
//     a hold that its release found gone in Redis (the hold ends: all of
//     h's holds, and a loss the watchdog reported meanwhile is reported
//     again by the next Unlock, so either way), or when h has no hold and
//     owes a loss (one fewer); ErrNotHeld when h has none of these; any
//     other error ends one hold locally, as nil does.
//
// A handle's holds are its own: an Unlock never ends another handle's hold,
// also one of the same owner id.

// slots is the number of handles a history uses.
const slots = 5

// state is the model's state: per handle, its holds, whether its last hold
// was lost and not yet unlocked, how many lost holds it was granted past
// (owed Unlocks that report their loss), and its owner.
type state struct {
	count [slots]int8
	lost  [slots]bool
	owed  [slots]int8
	owner [slots]int8
}

type opKind uint8

const (
	opLock opKind = iota
	opTryLock
	opUnlock
	opLost
)

var opNames = [...]string{"Lock", "TryLock", "Unlock", "Lost"}

// input is one call on handle slot, whose owner is owner; gated handles
// exclude the goroutines that share them.
type input struct {
	op    opKind
	slot  int
	owner int8
	gated bool
}

// output is what the call returned.
type output int8

const (
	outOK       output = iota // Lock, TryLock granted; Unlock nil; Lost
	outFailed                 // Lock, TryLock not granted (busy, ctx, error)
	outNotHeld                // Unlock: ErrNotHeld
	outLockLost               // Unlock: ErrLockLost
	outOther                  // Unlock: another error
)

var outNames = [...]string{"ok", "failed", "ErrNotHeld", "ErrLockLost", "error"}

// step returns the states the call can lead to; none: it cannot happen.
func step(st state, in input, out output) []state {
	s := in.slot
	switch in.op {
	case opLock, opTryLock:
		if out != outOK {
			return []state{st}
		}
		for o := range slots {
			if o != s && st.count[o] > 0 && st.owner[o] != in.owner {
				return nil // another owner holds
			}
		}
		if in.gated && (st.count[s] > 0 || st.lost[s]) {
			return nil // a sync.Mutex is held once
		}
		if st.lost[s] {
			st.owed[s]++ // granted past a lost hold: its Unlock comes later
		}
		st.count[s]++
		st.owner[s], st.lost[s] = in.owner, false
		return []state{st}
	case opLost:
		if st.count[s] > 0 {
			st.count[s], st.lost[s] = 0, true
		}
		return []state{st}
	}
	switch out {
	case outOK:
		if st.count[s] == 0 {
			return nil
		}
		st.count[s]--
	case outLockLost:
		switch {
		case st.lost[s]:
			st.lost[s] = false
		case st.count[s] > 0:
			st.count[s] = 0
			again := st
			again.lost[s] = true
			return []state{st, again}
		case st.owed[s] > 0:
			st.owed[s]--
		default:
			return nil
		}
	case outNotHeld:
		if st.count[s] > 0 || st.lost[s] || st.owed[s] > 0 {
			return nil
		}
	default:
		switch {
		case st.count[s] > 0:
			st.count[s]--
		case st.lost[s]:
			st.lost[s] = false
		case st.owed[s] > 0:
			st.owed[s]--
		default:
			return nil
		}
	}
	return []state{st}
}

var mutexModel = (&porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{state{}} },
	Step: func(s, in, out interface{}) []interface{} {
		var next []interface{}
		for _, st := range step(s.(state), in.(input), out.(output)) {
			next = append(next, st)
		}
		return next
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(input), out.(output)
		return fmt.Sprintf("%s(h%d, owner %d) -> %s", opNames[i.op], i.slot, i.owner, outNames[o])
	},
	DescribeState: func(s interface{}) string {
		st := s.(state)
		return fmt.Sprintf("holds %v lost %v owed %v owners %v", st.count, st.lost, st.owed, st.owner)
	},
}).ToModel()
