package hold

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/errs"
)

// blocked is how long a test watches an Enter that must not get in. The
// machine may be loaded, so a short watch only risks missing a defect (a
// pass that should have failed), never a false failure.
const blocked = 100 * time.Millisecond

// enterSoon runs g.Enter in a goroutine and returns its result channel.
func enterSoon(ctx context.Context, g *Gate) <-chan error {
	got := make(chan error, 1)
	go func() { got <- g.Enter(ctx) }()
	return got
}

func mustWait(t *testing.T, got <-chan error, why string) {
	t.Helper()
	select {
	case err := <-got:
		t.Fatalf("%s: got in (err %v) while it should wait", why, err)
	case <-time.After(blocked):
	}
}

func mustEnter(t *testing.T, got <-chan error, why string) {
	t.Helper()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("%s: %v", why, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still waiting", why)
	}
}

func TestGateLetsOneHolderInUntilExit(t *testing.T) {
	defer goleak.VerifyNone(t)
	g := NewGate(false, nil)
	if err := g.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.Acquired(true)

	// A second Enter waits; a ctx that ends returns its own error, unwrapped.
	ctx, cancel := context.WithTimeout(context.Background(), blocked)
	defer cancel()
	if err := g.Enter(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Enter on a taken gate: got %v, want context.DeadlineExceeded", err)
	}
	if ok, err := g.TryEnter(); ok || err != nil {
		t.Fatalf("TryEnter on a taken gate: (%v, %v), want (false, nil)", ok, err)
	}

	got := enterSoon(context.Background(), g)
	mustWait(t, got, "second holder")
	g.Exit() // from another goroutine than the holder's: allowed
	mustEnter(t, got, "after Exit")
	g.Acquired(true)
	g.Exit()
}

func TestGateOpensAfterAFailedAcquire(t *testing.T) {
	defer goleak.VerifyNone(t)
	g := NewGate(false, nil)
	if ok, err := g.TryEnter(); !ok || err != nil {
		t.Fatalf("TryEnter on an open gate: (%v, %v)", ok, err)
	}
	g.Acquired(false) // busy in Redis: the gate opens again
	if ok, _ := g.TryEnter(); !ok {
		t.Fatal("a failed acquire left the gate taken")
	}
	g.Acquired(true)
	g.Exit()
}

func TestGateExitWithoutAHolderChangesNothing(t *testing.T) {
	defer goleak.VerifyNone(t)
	g := NewGate(false, nil)
	g.Exit() // a stray Unlock: no debt, no credit
	if err := g.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A Lock in progress (entered, acquire not yet reported) is not opened
	// by a stray Exit either.
	g.Exit()
	if ok, _ := g.TryEnter(); ok {
		t.Fatal("a stray Exit opened the gate of a Lock in progress")
	}
	g.Acquired(true)
	g.Exit()
	if ok, _ := g.TryEnter(); !ok {
		t.Fatal("gate still taken after its Exit")
	}
	g.Acquired(false)
}

func TestRefusingGateReturnsErrNonReentrantAtOnce(t *testing.T) {
	defer goleak.VerifyNone(t)
	g := NewGate(true, nil)
	if err := g.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.Acquired(true)
	start := time.Now()
	if err := g.Enter(context.Background()); !errors.Is(err, errs.ErrNonReentrant) {
		t.Fatalf("Enter on a taken refusing gate: %v", err)
	}
	if ok, err := g.TryEnter(); ok || !errors.Is(err, errs.ErrNonReentrant) {
		t.Fatalf("TryEnter on a taken refusing gate: (%v, %v)", ok, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refusal took %v", d)
	}
	g.Exit()
	if err := g.Enter(context.Background()); err != nil {
		t.Fatalf("after Exit: %v", err)
	}
	g.Acquired(false)
}

func TestRWGateReadersShareWritersExclude(t *testing.T) {
	defer goleak.VerifyNone(t)
	w, r := NewRWGate(false, nil)
	for range 3 { // readers share
		if ok, err := r.TryEnter(); !ok || err != nil {
			t.Fatalf("reader: (%v, %v)", ok, err)
		}
		r.Acquired(true)
	}
	if ok, _ := w.TryEnter(); ok {
		t.Fatal("writer got in with readers inside")
	}
	writer := enterSoon(context.Background(), w)
	mustWait(t, writer, "writer behind readers")
	// A waiting writer holds back later readers, as with sync.RWMutex.
	late := enterSoon(context.Background(), r)
	mustWait(t, late, "reader behind a waiting writer")
	for range 3 {
		r.Exit()
	}
	mustEnter(t, writer, "writer after the readers left")
	w.Acquired(true)
	mustWait(t, late, "reader while the writer holds")
	w.Exit()
	mustEnter(t, late, "reader after the writer left")
	r.Acquired(true)
	r.Exit()
	if ok, _ := w.TryEnter(); !ok {
		t.Fatal("writer kept out after everyone left")
	}
	w.Acquired(false)
}

func TestRefusingRWGate(t *testing.T) {
	defer goleak.VerifyNone(t)
	w, r := NewRWGate(true, nil)
	if err := w.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.Acquired(true)
	if err := r.Enter(context.Background()); !errors.Is(err, errs.ErrNonReentrant) {
		t.Fatalf("read while this handle writes: %v", err)
	}
	w.Exit()
	if err := r.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Acquired(true)
	if err := w.Enter(context.Background()); !errors.Is(err, errs.ErrNonReentrant) {
		t.Fatalf("write while this handle reads: %v", err)
	}
	r.Exit()
}

func TestNilGateIsAlwaysOpen(t *testing.T) {
	var g *Gate
	for range 2 {
		if err := g.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ok, err := g.TryEnter(); !ok || err != nil {
			t.Fatalf("(%v, %v)", ok, err)
		}
		g.Acquired(true)
	}
	g.Exit()
	g.Acquired(false)
}

func TestGateWaitEndsWhenTheClientCloses(t *testing.T) {
	defer goleak.VerifyNone(t)
	closed := make(chan struct{})
	g := NewGate(false, closed)
	if err := g.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.Acquired(true)
	got := enterSoon(context.Background(), g)
	mustWait(t, got, "second holder")
	close(closed) // the holder's Unlock may never come now
	select {
	case err := <-got:
		if !errors.Is(err, errs.ErrClosed) {
			t.Fatalf("wait ended with %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait outlived the Client")
	}
	// A ctx that ends first still reports itself, unwrapped.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewGate(false, make(chan struct{})).Enter(ctx); err != nil {
		t.Fatalf("an open gate with a done ctx: %v (the caller checks ctx first)", err)
	}
	g2 := NewGate(false, make(chan struct{}))
	_ = g2.Enter(context.Background())
	g2.Acquired(true)
	if err := g2.Enter(ctx); err != context.Canceled {
		t.Fatalf("taken gate, done ctx: %v", err)
	}
}
