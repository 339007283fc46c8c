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

// epoch is the origin of monoNs: a reading of the monotonic clock.
var epoch = time.Now()

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
	heap  []*bucket
	byKey map[bucketKey]*bucket
	spare []*bucket // emptied buckets, reused (their arrays kept)
	last  *bucket   // the bucket add filed into last: a round's leases go to one
}

// add files waiting lease l by its due time (it must be in no bucket).
func (s *dueSchedule) add(l *Lease) {
	k := bucketKey{at: monoNs(l.due), backoff: l.backoff}
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
		if s.byKey == nil {
			s.byKey = map[bucketKey]*bucket{}
		}
		s.byKey[k] = b
		b.pos = len(s.heap)
		s.heap = append(s.heap, b)
		s.up(b.pos)
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
	if len(s.heap) == 0 {
		return nil
	}
	return s.heap[0]
}

// remove takes empty bucket b out of the heap and the index.
func (s *dueSchedule) remove(b *bucket) {
	delete(s.byKey, b.key)
	if s.last == b {
		s.last = nil
	}
	i, n := b.pos, len(s.heap)-1
	if i != n {
		s.swap(i, n)
	}
	s.heap[n] = nil
	s.heap = s.heap[:n]
	if i != n && !s.down(i) {
		s.up(i)
	}
	if cap(b.leases) <= maxSpareCap {
		s.spare = append(s.spare, b)
	}
}

// maxSpareCap bounds the arrays of the buckets kept for reuse, so a burst
// of acquisitions (a bucket each) does not keep large arrays alive.
const maxSpareCap = 1 << 16

// all returns every lease waiting, and empties the schedule.
func (s *dueSchedule) all(into []*Lease) []*Lease {
	for _, b := range s.heap {
		for _, l := range b.leases {
			l.bucket = nil
			into = append(into, l)
		}
	}
	s.heap, s.byKey, s.spare, s.last = nil, nil, nil, nil
	return into
}

func (s *dueSchedule) less(i, j int) bool { return s.heap[i].key.at < s.heap[j].key.at }

func (s *dueSchedule) swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.heap[i].pos, s.heap[j].pos = i, j
}

func (s *dueSchedule) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			return
		}
		s.swap(i, parent)
		i = parent
	}
}

func (s *dueSchedule) down(i int) bool {
	start := i
	for {
		c := 2*i + 1
		if c >= len(s.heap) {
			break
		}
		if r := c + 1; r < len(s.heap) && s.less(r, c) {
			c = r
		}
		if !s.less(c, i) {
			break
		}
		s.swap(i, c)
		i = c
	}
	return i > start
}

// flight is one renewal round's batch for one Renewer while it is in
// flight. Its leases stay in it (even once settled, which the lease's own
// flight field says); deadline is the earliest deadline among those still
// in flight with it, so a wake-up need not look at each of them.
type flight struct {
	r        Renewer
	leases   []*Lease
	deadline time.Time // zero when none of its leases is left in it
	bound    time.Time // when the renewal stops waiting for its replies
}

// carries reports whether l is still in flight with f.
func (f *flight) carries(l *Lease) bool { return l.active && l.inflight && l.flight == f }

// leaseHeap orders leases by their deadlines, kept in the entry as
// monotonic nanoseconds: the comparisons a heap operation makes read the
// heap's own array, not each lease. A lease knows its place (pos).
type leaseHeap struct {
	e []heapEntry
}

type heapEntry struct {
	at int64 // monoNs of the lease's deadline
	l  *Lease
}

func (h *leaseHeap) len() int { return len(h.e) }

// set files l at t: it is added, or moved if it is there.
func (h *leaseHeap) set(l *Lease, t time.Time) {
	at := monoNs(t)
	if i := l.pos; i >= 0 {
		h.e[i].at = at
		h.fix(i)
		return
	}
	l.pos = len(h.e)
	h.e = append(h.e, heapEntry{at: at, l: l})
	h.up(len(h.e) - 1)
}

// drop takes l out, if it is there.
func (h *leaseHeap) drop(l *Lease) {
	i := l.pos
	if i < 0 {
		return
	}
	n := len(h.e) - 1
	if i != n {
		h.swap(i, n)
	}
	h.e[n] = heapEntry{}
	h.e = h.e[:n]
	if i != n {
		h.fix(i)
	}
	l.pos = -1
}

func (h *leaseHeap) less(i, j int) bool { return h.e[i].at < h.e[j].at }

func (h *leaseHeap) swap(i, j int) {
	h.e[i], h.e[j] = h.e[j], h.e[i]
	h.e[i].l.pos, h.e[j].l.pos = i, j
}

// fix restores the order after entry i's time changed.
func (h *leaseHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *leaseHeap) up(i int) {
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
func (h *leaseHeap) down(i int) bool {
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
