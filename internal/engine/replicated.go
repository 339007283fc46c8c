package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
)

// replicated wraps the rueidis client of a Client whose policy is to wait
// for replicas: every script (EVAL, EVALSHA: all of redisync's writes) is
// sent together with a WAIT in one DoMulti. WAIT counts the replicas that
// acknowledged the writes of its own connection, and rueidis sends a batch
// holding a blocking command (WAIT) on one dedicated connection, so the
// count is about this very write. (WAIT sent alone would go to another
// connection and report on nothing.) A write acknowledged by fewer than n
// replicas fails with an *errs.UnconfirmedError (matching ErrNotReplicated,
// keeping the write's reply): it happened on the master, so an acquisition
// is then undone by the caller's compensation.
type replicated struct {
	rueidis.Client
	n       int64
	timeout time.Duration
	cluster bool // a batch spanning slots gets a WAIT per slot
}

// isScript reports whether cmd is a script that may write: EVALSHA or EVAL.
// The scripts flagged no-writes (latch Count, the inspections' read) go as
// EVALSHA_RO or EVAL_RO (internal/scripts), so they get no WAIT: they have
// nothing for a replica to acknowledge, and with a WAIT a lagging replica
// turned them into ErrNotReplicated.
func isScript(cmd rueidis.Completed) bool {
	c := cmd.Commands()
	return len(c) > 0 && (strings.EqualFold(c[0], "EVALSHA") || strings.EqualFold(c[0], "EVAL"))
}

// wait is the WAIT sent with a batch under ctx, and its timeout: the
// configured one, but at most half of what is left of ctx. A WAIT holds back
// the replies of the commands before it on its connection, so one that
// outlives ctx cuts them all off — also a NOSCRIPT, whose EVAL (rueidis's
// fallback, sent with the same ctx) then never goes out: a release whose
// caller had 300 ms, with a 5 s WAIT on a lagging replica, never ran, in the
// background either (its bound is CompensateTimeout), and the lock stayed
// held for its lease. Half leaves the other half for that EVAL and its own
// (shorter) WAIT.
func (r *replicated) wait(ctx context.Context) (rueidis.Completed, time.Duration) {
	t := r.timeout
	if dl, ok := ctx.Deadline(); ok {
		t = min(t, time.Until(dl)/2)
	}
	ms := max(t.Milliseconds(), 1) // WAIT 0 would block for ever
	return r.B().Wait().Numreplicas(r.n).Timeout(ms).Build(), time.Duration(ms) * time.Millisecond
}

// acked turns the reply of a WAIT with timeout t into nil or the error every
// write of the batch reports.
func (r *replicated) acked(res rueidis.RedisResult, t time.Duration) error {
	n, err := res.AsInt64()
	if err != nil {
		return fmt.Errorf("%w: WAIT: %v", errs.ErrNotReplicated, err)
	}
	if n < r.n {
		return fmt.Errorf("%w: %d of %d replicas within %v", errs.ErrNotReplicated, n, r.n, t)
	}
	return nil
}

// noWaitKey marks a context whose scripts go without a WAIT (Undo says
// which and why).
type noWaitKey struct{}

func markNoWait(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitKey{}, true)
}

func withoutWait(ctx context.Context) bool { return ctx.Value(noWaitKey{}) != nil }

func (r *replicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if !isScript(cmd) || withoutWait(ctx) {
		return r.Client.Do(ctx, cmd)
	}
	wait, t := r.wait(ctx)
	res := r.Client.DoMulti(ctx, cmd, wait)
	if res[0].Error() != nil {
		return res[0] // NOSCRIPT (the caller retries with EVAL) or another error
	}
	if err := r.acked(res[1], t); err != nil {
		return rueidis.NewErrorResult(&errs.UnconfirmedError{Err: err, Reply: res[0]})
	}
	return res[0]
}

func (r *replicated) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	scripts := false
	for _, c := range cmds {
		scripts = scripts || isScript(c)
	}
	if !scripts || withoutWait(ctx) {
		return r.Client.DoMulti(ctx, cmds...)
	}
	if r.cluster && spansSlots(cmds) {
		return r.doMultiBySlot(ctx, cmds) // a WAIT per slot (replicated_cluster.go)
	}
	return r.doMultiWaited(ctx, cmds)
}

// doMultiWaited sends cmds and a WAIT in one DoMulti; scripts the WAIT did
// not confirm fail with ErrNotReplicated.
//
// Which commands are scripts is read before sending: rueidis recycles a
// command once it has been sent, so reading it afterwards races with its
// next use (the race detector saw it in a renewal round).
func (r *replicated) doMultiWaited(ctx context.Context, cmds []rueidis.Completed) []rueidis.RedisResult {
	script := make([]bool, len(cmds))
	for i, c := range cmds {
		script[i] = isScript(c)
	}
	wait, t := r.wait(ctx)
	res := r.Client.DoMulti(ctx, append(cmds, wait)...)
	out, last := res[:len(cmds)], res[len(cmds)]
	if err := r.acked(last, t); err != nil {
		for i := range cmds {
			if script[i] && out[i].Error() == nil {
				out[i] = rueidis.NewErrorResult(&errs.UnconfirmedError{Err: err, Reply: out[i]})
			}
		}
	}
	return out
}
