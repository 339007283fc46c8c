package engine

import (
	"math/rand/v2"
	"time"
)

// Backoff paces the repeats of a command that failed in a way that may
// pass: each pause is twice the one before, from Min up to Max, and drawn
// from [d/2, d] (see Jitter), so that clients cut off together do not come
// back together. The zero value of the unexported state is the start: the
// first pause is Min.
type Backoff struct {
	Min, Max time.Duration
	d        time.Duration // the next pause before jitter; 0: Min
}

// Next returns the pause before the next repeat; the one after it is twice
// as long (up to Max).
func (b *Backoff) Next() time.Duration { return b.pause(true) }

// Again returns the pause before the next repeat and leaves the one after
// it as long: the last send was answered (an undo's confirmation), so the
// pace does not slow down.
func (b *Backoff) Again() time.Duration { return b.pause(false) }

func (b *Backoff) pause(grow bool) time.Duration {
	d := min(max(b.d, b.Min), b.Max)
	b.d = d
	if grow {
		b.d = min(2*d, b.Max)
	}
	return Jitter(d)
}

// Reset starts the pace over: the next pause is Min again.
func (b *Backoff) Reset() { b.d = 0 }

// Jitter spreads d over [d/2, d].
func Jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}
