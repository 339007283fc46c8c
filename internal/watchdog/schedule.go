package watchdog

import "time"

// The schedule keeps three kinds of place a lease can be in (under
// Watchdog.mu), so that a renewal moves it along in O(1) and a wake-up
// looks only at fronts:
//
//   - waiting to be sent: in the bucket of its due time (dueSchedule), with
//     every lease due at that same moment — the leases one renewal round
//     confirmed share their send time, so a round's leases go back as one
//     bucket and the heap holds buckets, not leases;
//   - in flight: in its round's flight, which is watched by the earliest
//     deadline among the leases it carries;
//   - watched by its own deadline (deadlineHeap): a lease whose deadline can
//     come before it is sent — in backoff, Fixed, or due no sooner than its
//     deadline.
//
// Both orders are a timeHeap: the buckets by due time, the leases by
// deadline.

// epoch is the origin of monoNs: a reading of the monotonic clock, an hour
// back, so that every time the engine meets is positive and 0 can mean
// none.
var epoch = time.Now().Add(-time.Hour)

// monoNs is t in nanoseconds since epoch, by the monotonic clock (t comes
// from time.Now, plus durations).
func monoNs(t time.Time) int64 { return int64(t.Sub(epoch)) }

// bucketKey names a bucket: a due time, and whether its leases are in
// backoff (a retry time, never pulled forward by the batching window).
type bucketKey struct {
	at      int64 // monoNs of the due time
	backoff bool
}

// bucket holds the waiting leases due at one moment, in no order.
type bucket struct {
	key    bucketKey
	leases []*Lease
	pos    int // its place in the heap
}

// dueSchedule is the leases waiting to be sent, by due time: a heap of
// buckets, and the buckets by key (so leases due at the same moment share
// one).
type dueSchedule struct {
	heap   timeHeap[*bucket]
	byKey  map[bucketKey]*bucket
	spare  []*bucket // emptied buckets, reused
	last   *bucket   // the bucket add filed into last: a round's leases go to one
	arrays leaseArrays
}

// add files waiting lease l by its due time (it must be in no bucket).
func (s *dueSchedule) add(l *Lease) {
	k := bucketKey{at: l.due, backoff: l.backoff}
	b := s.last
	if b == nil || b.key != k {
		b = s.byKey[k]
	}
	if b == nil {
		if n := len(s.spare); n > 0 {
			b, s.spare = s.spare[n-1], s.spare[:n-1]
			b.key = k
		} else {
			b = &bucket{key: k}
		}
		b.leases = s.arrays.take()
		if s.byKey == nil {
			s.byKey = map[bucketKey]*bucket{}
		}
		s.byKey[k] = b
		s.heap.push(b, k.at)
	}
	l.bucket, l.bidx = b, len(b.leases)
	b.leases = append(b.leases, l)
	s.last = b
}

// drop takes l out of its bucket, if it is in one.
func (s *dueSchedule) drop(l *Lease) {
	b := l.bucket
	if b == nil {
		return
	}
	n := len(b.leases) - 1
	if l.bidx != n {
		moved := b.leases[n]
		b.leases[l.bidx], moved.bidx = moved, l.bidx
	}
	b.leases[n] = nil
	b.leases = b.leases[:n]
	l.bucket, l.bidx = nil, 0
	if n == 0 {
		s.remove(b)
	}
}

// front is the earliest bucket (nil when no lease waits); it is never empty.
func (s *dueSchedule) front() *bucket {
	if s.heap.len() == 0 {
		return nil
	}
	return s.heap.front()
}

// remove takes empty bucket b out of the heap and the index.
func (s *dueSchedule) remove(b *bucket) {
	delete(s.byKey, b.key)
	if s.last == b {
		s.last = nil
	}
	s.heap.remove(b.pos)
	s.arrays.put(b.leases)
	b.leases = nil
	s.spare = append(s.spare, b)
}

// all returns every lease waiting, and empties the schedule.
func (s *dueSchedule) all(into []*Lease) []*Lease {
	for _, e := range s.heap.e {
		for _, l := range e.v.leases {
			l.bucket = nil
			into = append(into, l)
		}
	}
	s.heap, s.byKey, s.spare, s.last = timeHeap[*bucket]{}, nil, nil, nil
	return into
}

func (b *bucket) setPos(i int) { b.pos = i }

// leaseArrays keeps the arrays of emptied buckets and landed rounds for
// the next ones: a round of 100,000 leases leaves its bucket and its flight
// as one array each, which the next round's would otherwise allocate again,
// growing them by doubling (garbage the collector pays for by scanning
// every live hold). It keeps a few, none larger than twice the leases
// registered (or maxSpareCap), so a burst of holds does not keep large
// arrays alive after they end.
type leaseArrays struct {
	free  [][]*Lease
	limit int // the registered leases: see put
}

const (
	maxSpareArrays = 8
	maxSpareCap    = 1 << 16
)

// take returns an empty array, with room if one was kept.
func (a *leaseArrays) take() []*Lease {
	n := len(a.free)
	if n == 0 {
		return nil
	}
	l := a.free[n-1]
	a.free[n-1] = nil
	a.free = a.free[:n-1]
	return l
}

// put keeps l's array for reuse, if it is worth keeping.
func (a *leaseArrays) put(l []*Lease) {
	if cap(l) == 0 || len(a.free) >= maxSpareArrays || cap(l) > max(maxSpareCap, 2*a.limit) {
		return
	}
	clear(l[:cap(l)])
	a.free = append(a.free, l[:0])
}

// flight is one renewal round's batch for one Renewer while it is in
// flight. Its leases stay in it (even once settled, which the lease's own
// flight field says); deadline is the earliest deadline among those still
// in flight with it, so a wake-up need not look at each of them.
type flight struct {
	r        Renewer
	leases   []*Lease
	deadline int64     // monoNs; 0 when none of its leases is left in it
	bound    time.Time // when the renewal stops waiting for its replies
	stream   bool      // r is a StreamRenewer: see add
	b        int64     // bound in monoNs, while the round is filled
}

// carries reports whether l is still in flight with f.
func (f *flight) carries(l *Lease) bool { return l.active && l.inflight && l.flight == f }

// add puts l in f, a round sent at s (monoNs), and extends f's wait bound
// and earliest deadline to cover it, while the lease is at hand (a round
// has thousands of leases: a second look at each costs a cache miss each).
//
// A renewal waits for its replies at most a third of a lease after it was
// sent: a command that hangs (a paused shard) is given up then, and its
// leases, which were due, are retried well before their deadlines. A
// Renewer that returns all results at once is waited for no longer than the
// earliest deadline in its batch and a third of the shortest lease (the
// answers for every lease of the batch wait for the slowest command). A
// StreamRenewer settles each lease as its answer arrives, so the batch is
// waited for as long as any of its leases can still use an answer: no
// lease's wait is cut short by a neighbour's deadline (those leases are lost
// at their deadlines whatever is in flight).
func (f *flight) add(l *Lease, s int64) {
	dl := l.deadline
	own := min(dl, s+int64(l.TTL/3))
	switch {
	case len(f.leases) == 0:
		f.b, f.deadline = own, dl
	case f.stream:
		f.b, f.deadline = max(f.b, own), min(f.deadline, dl)
	default:
		f.b, f.deadline = min(f.b, own), min(f.deadline, dl)
	}
	f.leases = append(f.leases, l)
	l.flight = f
}

// watch sets f's wait bound once the round is filled (under mu).
func (f *flight) watch() { f.bound = epoch.Add(time.Duration(f.b)) }

// deadlineHeap holds the leases watched by their own deadlines.
type deadlineHeap struct{ timeHeap[*Lease] }

// set files l at t: it is added, or moved if it is there.
func (h *deadlineHeap) set(l *Lease, t int64) {
	if l.pos >= 0 {
		h.move(l.pos, t)
		return
	}
	h.push(l, t)
}

// drop takes l out, if it is there.
func (h *deadlineHeap) drop(l *Lease) {
	if l.pos >= 0 {
		h.remove(l.pos)
	}
}

func (l *Lease) setPos(i int) { l.pos = i }

// timeHeap is a binary min-heap of items by a time (monotonic ns) kept in
// each entry, so the comparisons of a heap operation read the heap's own
// array, not the items. Each item is told its place (setPos: -1 once it is
// out), so it can be moved or taken out from anywhere.
type timeHeap[T placed] struct{ e []timed[T] }

// placed is an item of a timeHeap.
type placed interface{ setPos(i int) }

type timed[T any] struct {
	at int64
	v  T
}

func (h *timeHeap[T]) len() int { return len(h.e) }

// front is the earliest item; the heap must not be empty.
func (h *timeHeap[T]) front() T { return h.e[0].v }

// push adds v at time at.
func (h *timeHeap[T]) push(v T, at int64) {
	i := len(h.e)
	h.e = append(h.e, timed[T]{at: at, v: v})
	v.setPos(i)
	h.up(i)
}

// move sets entry i's time to at.
func (h *timeHeap[T]) move(i int, at int64) {
	h.e[i].at = at
	h.fix(i)
}

// remove takes entry i out.
func (h *timeHeap[T]) remove(i int) {
	v := h.e[i].v
	n := len(h.e) - 1
	if i != n {
		h.swap(i, n)
	}
	h.e[n] = timed[T]{}
	h.e = h.e[:n]
	if i != n {
		h.fix(i)
	}
	v.setPos(-1)
}

func (h *timeHeap[T]) less(i, j int) bool { return h.e[i].at < h.e[j].at }

func (h *timeHeap[T]) swap(i, j int) {
	h.e[i], h.e[j] = h.e[j], h.e[i]
	h.e[i].v.setPos(i)
	h.e[j].v.setPos(j)
}

// fix restores the order after entry i's time changed.
func (h *timeHeap[T]) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *timeHeap[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down sifts entry i down; it reports whether it moved.
func (h *timeHeap[T]) down(i int) bool {
	start := i
	for {
		c := 2*i + 1
		if c >= len(h.e) {
			break
		}
		if r := c + 1; r < len(h.e) && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}
