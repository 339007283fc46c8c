package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync"
)

// TestLapsedExcusesOnlyADeadlineLossOfLateRenewals checks the model's
// deadline rule on recorded events: a hold no fault touched may be lost
// when no renewal confirmed it within TTL − drift on a machine seen loaded
// (rounds timed out, or the process stalled), and only then — not a hold
// lost at a round (the server said it was gone), nor one whose rounds
// failed with an error reply (defect 6's mutant), nor one lost at its
// deadline while the machine kept up.
func TestLapsedExcusesOnlyADeadlineLossOfLateRenewals(t *testing.T) {
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	renewed := func(sent, got time.Duration) watchEvent {
		return watchEvent{at: at(got), kind: redisync.EventRenewed, layout: "lock", sent: at(sent)}
	}
	failed := func(d time.Duration, err error) watchEvent {
		return watchEvent{at: at(d), kind: redisync.EventRenewFailed, layout: "lock", err: err}
	}
	lost := func(d time.Duration) watchEvent {
		return watchEvent{at: at(d), kind: redisync.EventLost, name: "f"}
	}
	wrongType := errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
	timeout := fmt.Errorf("renew: %w", context.DeadlineExceeded)
	for _, tc := range []struct {
		name   string
		events []watchEvent
		stalls []stall
		want   bool
	}{
		{"lost at the deadline after the last round, the process stalled", []watchEvent{renewed(ms(660), ms(700)), lost(ms(660 + 1980))},
			[]stall{{at(ms(1000)), at(ms(1800))}}, true},
		{"lost at the deadline after the last round, nothing loaded", []watchEvent{renewed(ms(660), ms(700)), lost(ms(660 + 1980))},
			nil, false},
		{"lost at the deadline after the last round, a stall before it", []watchEvent{renewed(ms(660), ms(700)), lost(ms(660 + 1980))},
			[]stall{{at(ms(100)), at(ms(600))}}, false},
		{"lost at the deadline after rounds that timed out", []watchEvent{
			renewed(ms(660), ms(700)), failed(ms(2000), errors.Join(timeout, timeout)), lost(ms(660 + 1980)),
		}, nil, true},
		{"lost at the deadline of the grant, no round answered", []watchEvent{failed(ms(1000), timeout), lost(ms(1980))}, nil, true},
		{"lost at a round a third of the lease after the last one", []watchEvent{
			renewed(ms(660), ms(700)), renewed(ms(1330), ms(1340)), lost(ms(2000)),
		}, []stall{{at(ms(1400)), at(ms(1900))}}, false},
		{"lost at the first round", []watchEvent{lost(ms(670))}, []stall{{at(ms(100)), at(ms(600))}}, false},
		{"lost after rounds failed with an error reply", []watchEvent{
			renewed(ms(660), ms(700)), failed(ms(1400), errors.Join(timeout, wrongType)), lost(ms(660 + 1980)),
		}, []stall{{at(ms(1000)), at(ms(1800))}}, false},
		{"a Lost event of another lock", []watchEvent{{at: at(ms(2500)), kind: redisync.EventLost, name: "r"}},
			[]stall{{at(ms(1000)), at(ms(1800))}}, false},
		{"a round of another layout does not confirm it", []watchEvent{
			{at: at(ms(1400)), kind: redisync.EventRenewed, layout: "rwlock", sent: at(ms(1330))}, lost(ms(1980)),
		}, []stall{{at(ms(1000)), at(ms(1800))}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{watch: tc.events, stalls: tc.stalls}
			if got := rec.lapsed("lock", []string{"f"}, t0); got != tc.want {
				t.Fatalf("lapsed = %v, want %v", got, tc.want)
			}
		})
	}
}
