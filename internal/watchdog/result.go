package watchdog

import "context"

// Status is what one renewal learned about one lease.
type Status uint8

const (
	// Unknown: no answer for this lease (a timeout, a connection error, an
	// error reply to the command that carried it). The lease is retried at
	// the paced interval until its deadline.
	Unknown Status = iota
	// Alive: the server confirmed the hold and extended it; the lease now
	// runs from the moment the renewal was sent.
	Alive
	// Gone: the server says the hold is not this owner's any more (key
	// deleted, expired, overwritten, or of another type). Lost at once.
	Gone
)

// String names the status.
func (s Status) String() string {
	switch s {
	case Alive:
		return "alive"
	case Gone:
		return "gone"
	}
	return "unknown"
}

// Result is the outcome of a renewal for one lease. Err says why the status
// is Unknown (nil for Alive and Gone).
type Result struct {
	Status Status
	Err    error
}

// StreamRenewer is a Renewer that hands over each lease's result as soon as
// it has it, instead of all of them when the slowest command of the batch
// (a paused Cluster shard, a stalled Redlock node) answers or times out. The
// watchdog settles a reported lease at once: a lease whose server answered
// is confirmed (or found gone) while its neighbours still wait, and so it is
// never lost at its deadline for want of an answer that had arrived. The
// watchdog calls RenewEach instead of Renew.
type StreamRenewer interface {
	Renewer
	// RenewEach renews leases as Renew does and calls report(i, r) for
	// lease i when its result is known: at most once per lease (later calls
	// are ignored), from any goroutine, before RenewEach returns. A lease
	// not reported by then counts as Unknown. It must return when ctx ends.
	RenewEach(ctx context.Context, leases []*Lease, report func(i int, r Result))
}

// PartRenewer is a StreamRenewer that reports the results of a part of
// the batch at once (the holds of one command): the watchdog settles them
// under one lock, not one per lease. The watchdog calls RenewParts instead
// of RenewEach.
type PartRenewer interface {
	StreamRenewer
	// RenewParts renews leases as RenewEach does and calls report(idx,
	// results) with results[j] for lease idx[j], as RenewEach reports one;
	// report may keep neither slice.
	RenewParts(ctx context.Context, leases []*Lease, report func(idx []int, results []Result))
}

// Unknowns returns n Unknown results carrying err: what a Renewer reports
// for the leases of a command that got no usable answer.
func Unknowns(n int, err error) []Result {
	out := make([]Result, n)
	for i := range out {
		out[i] = Result{Status: Unknown, Err: err}
	}
	return out
}
