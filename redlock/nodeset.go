package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/scripts"
)

// nodeSet is the nodes of a Redlock (or, for a renewal batch, the masters
// of every hold in it), and the one way to send them a command in
// parallel. There are two:
//
//   - each, for commands that may be cut short (the inspection reads, a
//     force unlock, a renewal batch): every node's command is bounded by a
//     timeout of its own, and each returns when every node has returned;
//   - a flight (sendKept, sendCut), for the commands of a round (acquire,
//     fence, release): the caller waits for the replies for a node timeout
//     as a nodeWait counts it, and then either leaves the replies still
//     owed to a Client task (sendKept: never abandoned in flight) or cuts
//     them short (sendCut: the fence only).
type nodeSet []*node

// all lists every node's index.
func (s nodeSet) all() []int {
	idx := make([]int, len(s))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// each runs f on every node in parallel, each with ctx bounded by timeout
// (none when timeout is 0), and returns when every f has returned.
func (s nodeSet) each(ctx context.Context, timeout time.Duration, f func(ctx context.Context, i int, n *node)) {
	var wg sync.WaitGroup
	for i, n := range s {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nctx := ctx
			if timeout > 0 {
				var cancel context.CancelFunc
				nctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			f(nctx, i, n)
		}()
	}
	wg.Wait()
}

// reply is one node's answer to a command of a flight.
type reply[T any] struct {
	i   int // the node's index in the set
	v   T
	err error
}

// flight is one command sent to some nodes of a set, in parallel: the
// replies in so far, by node, and those still owed.
type flight[T any] struct {
	results chan reply[T] // one per node sent to, buffered
	idx     []int         // the nodes sent to
	replied []bool        // by node index
	got     []reply[T]    // by node index, where replied
	pending int           // replies not received yet
	// awaited counts the pending replies wait waits for: those of nodes
	// that were not stalled when the command was sent (nodeState.stalled).
	awaited int
	stalled []bool
	cancel  context.CancelFunc // sendCut's: cuts the commands short
}

func newFlight[T any](s nodeSet, idx []int) *flight[T] {
	return &flight[T]{
		results: make(chan reply[T], len(idx)),
		idx:     idx,
		replied: make([]bool, len(s)),
		got:     make([]reply[T], len(s)),
		pending: len(idx),
		stalled: make([]bool, len(s)),
	}
}

// sendKept sends cmd to the nodes idx, never to be abandoned in flight: a
// command given up on may still run on its node after whatever is sent
// next on another connection (the rule engine.Settler gives rlock). So each
// runs with a context ctx's end does not cancel (e0.Background: bounded by
// engine.CompensateTimeout, and by the first Client giving up its tasks),
// and counts in its node's in-flight state; a node that was stalled for
// longer than stall when the command went out is not waited for.
func sendKept[T any](ctx context.Context, e0 *engine.Engine, s nodeSet, idx []int, stall time.Duration, cmd func(context.Context, *node) (T, error)) *flight[T] {
	f := newFlight[T](s, idx)
	now := time.Now()
	for _, i := range idx {
		f.stalled[i] = s[i].state.stalled(now, stall)
		if !f.stalled[i] {
			f.awaited++
		}
		s[i].state.sent(now)
	}
	for _, i := range idx {
		n := s[i]
		go func() { // its reply is received by wait, next or rest
			kctx, cancel := e0.Background(ctx) // ends when the task's Client gives it up
			defer cancel()
			v, err := cmd(kctx, n)
			n.state.returned(time.Now(), err == nil || scripts.IsReply(err))
			f.results <- reply[T]{i: i, v: v, err: err}
		}()
	}
	return f
}

// sendCut sends cmd to the nodes idx with a context that cut cancels: only
// for a command that may be abandoned in flight (the fence), never for an
// acquire or a release.
func sendCut[T any](ctx context.Context, s nodeSet, idx []int, cmd func(context.Context, *node) (T, error)) *flight[T] {
	f := newFlight[T](s, idx)
	f.awaited = len(idx)
	cctx, cancel := context.WithCancel(ctx)
	f.cancel = cancel
	for _, i := range idx {
		n := s[i]
		go func() { // its reply is received by wait or cut
			v, err := cmd(cctx, n)
			f.results <- reply[T]{i: i, v: v, err: err}
		}()
	}
	return f
}

// wait waits for the replies for the node timeout d, counted as nodeWait
// counts it (a stall of this process is not charged to the nodes, and the
// wait never outlasts limit), or until ctx ends, and not for nodes that
// were stalled when the command went out; it reports false when ctx ended
// first. A reply that is already in when the wait stops counts, even if
// the node timeout has passed: a client stalled by a busy machine should
// not throw away answers that arrived. during, when set (tests), runs
// once the wait has begun.
func (f *flight[T]) wait(ctx context.Context, d, limit time.Duration, during func()) bool {
	w := newNodeWait(d, limit)
	defer w.stop()
	if during != nil {
		during()
	}
	for waiting := true; waiting && f.awaited > 0; {
		select {
		case r := <-f.results:
			f.take(r)
		case <-w.C():
			waiting = !w.expired()
		case <-ctx.Done():
			waiting = false
		}
	}
	for f.pending > 0 {
		select {
		case r := <-f.results:
			f.take(r)
		default:
			return ctx.Err() == nil
		}
	}
	return ctx.Err() == nil
}

func (f *flight[T]) take(r reply[T]) {
	f.replied[r.i], f.got[r.i] = true, r
	f.pending--
	if !f.stalled[r.i] {
		f.awaited--
	}
}

// next receives a reply still owed (pending > 0): a Client task's.
func (f *flight[T]) next() reply[T] { return <-f.results }

// rest returns what awaits the replies still owed (see Mutex.awaitLate),
// nil when none is.
func (f *flight[T]) rest() func() {
	pending := f.pending
	if pending == 0 {
		return nil
	}
	return func() {
		for range pending {
			<-f.results
		}
	}
}

// cut ends a sendCut flight: the commands still running are cancelled and
// awaited. One cut short by the node timeout, not by the caller's ctx,
// fails with ErrNodeTimeout, so that a live ctx never sees
// context.Canceled.
func (f *flight[T]) cut(ctx context.Context) {
	f.cancel()
	for f.pending > 0 {
		r := <-f.results
		if r.err != nil && ctx.Err() == nil {
			r.err = ErrNodeTimeout
		}
		f.take(r)
	}
}

// errs is one error per node of the set: nil for nodes not sent to, the
// reply's error where a node replied, late where a reply is still owed.
func (f *flight[T]) errs(late error) []error {
	out := make([]error, len(f.replied))
	for _, i := range f.idx {
		if f.replied[i] {
			out[i] = f.got[i].err
		} else {
			out[i] = late
		}
	}
	return out
}
