package watchdog

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTimeHeapKeepsOrderAndPlaces drives the one heap both orders of the
// schedule use through random pushes, moves and removals from anywhere,
// and checks after each step that every item knows its place and that the
// items come out by time.
func TestTimeHeapKeepsOrderAndPlaces(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h deadlineHeap
	var in []*Lease // the leases in the heap
	at := map[*Lease]int64{}
	check := func() {
		t.Helper()
		if len(in) != h.len() {
			t.Fatalf("heap has %d leases, want %d", h.len(), len(in))
		}
		for i, e := range h.e {
			switch {
			case e.v.pos != i:
				t.Fatalf("entry %d's lease thinks it is at %d", i, e.v.pos)
			case e.at != at[e.v]:
				t.Fatalf("entry %d at %d, want %d", i, e.at, at[e.v])
			case i > 0 && h.e[(i-1)/2].at > e.at:
				t.Fatalf("heap order broken at %d", i)
			}
		}
	}
	for range 2000 {
		switch op := rng.IntN(4); {
		case op <= 1 || len(in) == 0:
			l := &Lease{pos: -1}
			at[l] = rng.Int64N(1000)
			h.set(l, at[l])
			in = append(in, l)
		case op == 2:
			l := in[rng.IntN(len(in))]
			at[l] = rng.Int64N(1000)
			h.set(l, at[l])
		default:
			i := rng.IntN(len(in))
			l := in[i]
			h.drop(l)
			require.Equal(t, -1, l.pos, "a lease taken out is told so")
			in = slices.Delete(in, i, i+1)
		}
		check()
	}
	var got []int64
	for h.len() > 0 {
		l := h.front()
		got = append(got, at[l])
		h.drop(l)
	}
	require.True(t, slices.IsSorted(got), "the front is always the earliest")
}

// TestLeaseArraysKeepFewAndBounded pins what the reuse of round arrays may
// keep alive: a few arrays, emptied, none larger than twice the leases
// registered (or maxSpareCap).
func TestLeaseArraysKeepFewAndBounded(t *testing.T) {
	var a leaseArrays
	l := &Lease{}
	big := make([]*Lease, 3*maxSpareCap)
	big[0] = l
	a.limit = maxSpareCap
	a.put(big)
	require.Empty(t, a.free, "an array over twice the registered leases is dropped")
	a.limit = 2 * maxSpareCap
	a.put(big)
	require.Len(t, a.free, 1)
	got := a.take()
	require.Empty(t, got)
	require.Nil(t, got[:1][0], "a kept array holds no lease")
	for range 2 * maxSpareArrays {
		a.put(make([]*Lease, 1))
	}
	require.Len(t, a.free, maxSpareArrays)
}
