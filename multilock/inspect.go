package multilock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync"
)

// The inspection surface every lock kind shares, over the components: a
// multilock is held when every component is. Each component must offer it
// (IsLocked, HoldCount, TTL and ForceUnlock: every lock kind of this module
// does); one that does not is an error matching ErrNotInspectable. Components are asked one
// after the other, in the canonical order; a component's refusal (see
// Lock) is returned before any is asked.

// ErrNotInspectable is returned by the inspection methods when a component
// has no inspection methods (a Locker of another module).
var ErrNotInspectable = errors.New("multilock: a component cannot be inspected")

// inspector is the inspection surface a component must offer.
type inspector interface {
	IsLocked(ctx context.Context) (bool, error)
	HoldCount(ctx context.Context) (int, error)
	TTL(ctx context.Context) (time.Duration, error)
	ForceUnlock(ctx context.Context) (bool, error)
}

func (m *Mutex) inspectors() ([]inspector, error) {
	if m.refused != nil {
		return nil, m.refused
	}
	out := make([]inspector, len(m.parts))
	for i, p := range m.parts {
		in, ok := p.(inspector)
		if !ok {
			return nil, fmt.Errorf("multilock: component %q (%T): %w", m.names[i], p, ErrNotInspectable)
		}
		out[i] = in
	}
	return out, nil
}

// IsLocked reports whether every component is held (by anyone).
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	ins, err := m.inspectors()
	if err != nil {
		return false, err
	}
	for i, in := range ins {
		ok, err := in.IsLocked(ctx)
		if err != nil {
			return false, fmt.Errorf("multilock: component %q: %w", m.names[i], err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// HoldCount returns the smallest hold count of the components' owners:
// how many times this multilock's components are all held by their handles.
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	ins, err := m.inspectors()
	if err != nil {
		return 0, err
	}
	least := -1
	for i, in := range ins {
		n, err := in.HoldCount(ctx)
		if err != nil {
			return 0, fmt.Errorf("multilock: component %q: %w", m.names[i], err)
		}
		if least < 0 || n < least {
			least = n
		}
	}
	return max(least, 0), nil
}

// TTL returns the shortest remaining lease among the components (0 when
// one is not locked): how long the multilock's hold lasts without renewal.
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	ins, err := m.inspectors()
	if err != nil {
		return 0, err
	}
	var least time.Duration
	for i, in := range ins {
		d, err := in.TTL(ctx)
		if err != nil {
			return 0, fmt.Errorf("multilock: component %q: %w", m.names[i], err)
		}
		if i == 0 || d < least {
			least = d
		}
	}
	return max(least, 0), nil
}

// Holders returns the holders of every component (each component's own
// Holders; a component without one is ErrNotInspectable), in the canonical
// order, one slice per component.
func (m *Mutex) Holders(ctx context.Context) ([][]redisync.Holder, error) {
	type holderser interface {
		Holders(ctx context.Context) ([]redisync.Holder, error)
	}
	if m.refused != nil {
		return nil, m.refused
	}
	out := make([][]redisync.Holder, len(m.parts))
	for i, p := range m.parts {
		h, ok := p.(holderser)
		if !ok {
			return nil, fmt.Errorf("multilock: component %q (%T): %w", m.names[i], p, ErrNotInspectable)
		}
		hs, err := h.Holders(ctx)
		if err != nil {
			return nil, fmt.Errorf("multilock: component %q: %w", m.names[i], err)
		}
		out[i] = hs
	}
	return out, nil
}

// ForceUnlock force-unlocks every component (an operator's tool) and
// reports whether any was locked; the errors of those that failed are
// joined.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	ins, err := m.inspectors()
	if err != nil {
		return false, err
	}
	found := false
	var errs []error
	for i, in := range ins {
		ok, err := in.ForceUnlock(ctx)
		found = found || ok
		if err != nil {
			errs = append(errs, fmt.Errorf("multilock: component %q: %w", m.names[i], err))
		}
	}
	return found, errors.Join(errs...)
}
