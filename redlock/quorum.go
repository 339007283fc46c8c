package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/watchdog"
)

var (
	// ErrNodeBusy: the node's lock is held by another owner.
	ErrNodeBusy = errs.New(errs.Busy, "redlock: node busy")
	// ErrNodeRestarted: the node restarted (its run_id changed) less than
	// the restart quarantine ago, so it may have forgotten a live lock and
	// does not count towards a quorum yet.
	ErrNodeRestarted = errs.New(errs.Transient, "redlock: node restarted recently")
	// ErrNodeTimeout: the node did not answer within the node timeout
	// (WithNodeTimeout), or before Unlock stopped waiting. Its command was
	// not abandoned: a Client task awaits the reply and undoes a late grant.
	// It is not context.DeadlineExceeded, which only ever means that the
	// caller's ctx ended.
	ErrNodeTimeout = errs.New(errs.Transient, "redlock: node did not answer in time")
)

// OpRelease is QuorumError.Op for a release (Unlock).
const OpRelease = "release"

// QuorumError reports an acquisition that did not reach a valid quorum for
// a reason other than the lock being held elsewhere: node errors, nodes in
// restart quarantine, or a validity that ran out (the acquisition took
// longer than the lease allows). Unlock returns one with Op = OpRelease when
// no node confirmed the release.
type QuorumError struct {
	// Name is the lock's name (the key on every node).
	Name string
	// Op is "" for an acquisition and OpRelease for a release.
	Op       string
	Granted  int           // nodes that granted (release: that confirmed)
	Required int           // the quorum: N/2+1
	Validity time.Duration // lease − elapsed − drift when it was computed (<= 0: ran out)
	// Nodes holds one entry per node, in the order of the clients given to
	// New: nil where the node granted, the node's error otherwise
	// (ErrNodeBusy, ErrNodeRestarted, or a Redis or network error).
	Nodes []error
	// Cause is the context error when ctx ended while retrying, else nil.
	Cause error
}

func (e *QuorumError) Error() string {
	var b strings.Builder
	b.WriteString("redlock")
	if e.Name != "" {
		fmt.Fprintf(&b, " %q", e.Name)
	}
	if e.Op == OpRelease {
		fmt.Fprintf(&b, ": release confirmed by %d of %d nodes", e.Granted, len(e.Nodes))
	} else {
		fmt.Fprintf(&b, ": acquire granted by %d of %d nodes, %d required", e.Granted, len(e.Nodes), e.Required)
	}
	if e.Op != OpRelease && e.Granted >= e.Required {
		fmt.Fprintf(&b, ", but the validity ran out (%v)", e.Validity)
	}
	for i, err := range e.Nodes {
		if err != nil {
			fmt.Fprintf(&b, "; node %d: %s", i, errs.OneLine(err.Error()))
		}
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, "; %s", errs.OneLine(e.Cause.Error()))
	}
	return b.String()
}

// Unwrap returns the node errors (and the context error, if any), so that
// errors.Is sees through to them.
func (e *QuorumError) Unwrap() []error {
	var out []error
	for _, err := range e.Nodes {
		if err != nil {
			out = append(out, err)
		}
	}
	if e.Cause != nil {
		out = append(out, e.Cause)
	}
	return out
}

// permanent reports whether the nodes' errors make a quorum impossible until
// someone changes the data, the ACL or the configuration: more nodes than a
// quorum can spare answered with an error errs.Classify calls Permanent (a
// key of another kind, NOPERM, OOM). Retrying would only wait for ctx. A
// context error of a node's is its command's own bound running out (the
// caller's ctx is checked apart), so it counts as a node that was slow.
func (e *QuorumError) permanent() bool {
	n := 0
	for _, err := range e.Nodes {
		if err != nil && errs.Classify(err) == errs.Permanent &&
			!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			n++
		}
	}
	return n > len(e.Nodes)-e.Required
}

// quorum is a majority of n nodes.
func quorum(n int) int { return n/2 + 1 }

// validity is how long a hold acquired in elapsed may still be relied on:
// lease − elapsed − drift (drift: 1% of the lease + 2 ms, the watchdog's).
func validity(lease, elapsed time.Duration) time.Duration {
	return lease - elapsed - watchdog.Drift(lease)
}

// chooseToken is the fencing token of a grant: one above the highest clock
// reading (max(counter, server time)) among the nodes that granted.
func chooseToken(readings []uint64) uint64 {
	var top uint64
	for _, r := range readings {
		top = max(top, r)
	}
	return top + 1
}

// outcome classifies a failed attempt: busy when the nodes that refused
// because another owner holds the lock are enough to make a quorum
// impossible (the lock is simply taken), a QuorumError otherwise.
func outcome(nodeErrs []error, granted int, valid time.Duration) *QuorumError {
	busy := 0
	for _, err := range nodeErrs {
		if errors.Is(err, ErrNodeBusy) {
			busy++
		}
	}
	q := quorum(len(nodeErrs))
	if granted < q && busy > len(nodeErrs)-q {
		return nil
	}
	return &QuorumError{Granted: granted, Required: q, Validity: valid, Nodes: nodeErrs}
}
