package engine

import (
	"context"
	"errors"
	"time"
)

// undoPace is the first pause between two sends of an undo that got no
// reply; each pause doubles, up to undoPaceMax, and is jittered (half to
// all of it) so that the undos of many calls cut off by one stall do not
// reach the server in step when it returns.
const (
	undoPace    = 100 * time.Millisecond
	undoPaceMax = time.Second
)

// Resend reports whether a send of an undo that failed with err may do
// better later: the server did not answer within the send's bound, or
// answered with an error that passes (Transient). An error no resend
// changes (NOPERM, a key of another kind, a closed rueidis client) ends
// the undo.
func Resend(err error) bool {
	return err != nil && (errors.Is(err, context.DeadlineExceeded) || Transient(err))
}

// Persist sends an undo — the rollback of a grant or of a queue entry
// whose caller has gone, a release its Unlock stopped waiting for — until
// the server answers it. send runs with a context from Undo (one send is
// bounded by CompensateTimeout) and reports whether it is done: the server
// answered, or with an error no resend changes (see Resend).
// Persist sends again, paced and jittered, while the undo can still
// matter: until until (the end of the lease that would end the grant
// anyway, the deadline of the queue entry), and while the Client keeps its
// tasks — Close giving them up ends it, and a Persist that starts on a
// closed Client sends once.
//
// With confirm, once a send went unanswered, the first answer is followed
// by one more send: what the undo undoes may be an acquire that went out
// on a connection since dropped, which the server can run after the undo
// it overtook (a stopped server reads the dropped connection's bytes when
// it resumes). The undo names what it undoes (an owner's count, a latch
// request, a round's value), so a send that finds nothing does nothing.
func (e *Engine) Persist(ctx context.Context, until time.Time, confirm bool, send func(context.Context) bool) {
	once := e.IsClosed()
	e.abandonMu.Lock()
	given := e.abandon
	e.abandonMu.Unlock()
	pace, missed := Backoff{Min: undoPace, Max: undoPaceMax}, false
	for {
		uctx, cancel := e.Undo(ctx)
		answered := send(uctx)
		cancel()
		switch {
		case answered && !(confirm && missed):
			return
		case answered:
			confirm = false // one confirmation
		default:
			missed = true
		}
		if once || given.Err() != nil {
			return
		}
		var wait time.Duration
		if answered {
			wait = pace.Again() // the confirmation: an answer does not slow the pace
		} else {
			wait = pace.Next()
		}
		if time.Now().Add(wait).After(until) {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-given.Done():
			t.Stop()
			return
		}
	}
}
