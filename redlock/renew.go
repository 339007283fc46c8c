package redlock

import (
	"context"
	"errors"

	"github.com/redisync/redisync/scripts"
	"github.com/redisync/redisync/watchdog"
)

// renewer extends Redlock holds for the first client's watchdog: each hold
// on every node in parallel. A hold is alive while a quorum confirms it,
// and lost as soon as so many nodes report it gone that a quorum cannot
// confirm it; anything in between (timeouts) is retried until the validity
// would run out.
type renewer struct{}

var renewerOf = renewer{}

var errUndecided = errors.New("redlock: renewal not confirmed by a quorum yet")

func (renewer) Renew(ctx context.Context, leases []*watchdog.Lease) ([]bool, error) {
	alive := make([]bool, len(leases))
	undecided := false
	for i, l := range leases {
		m := l.Target.(*Mutex)
		ok, gone := 0, 0
		errs := fanOut(ctx, m.nodes, m.nodeTimeout*4, func(ctx context.Context, _ int, n *node) error {
			held, err := scripts.RedlockRenew(ctx, n.e.RC, &n.keys, m.owner, m.leaseMs)
			if err == nil && !held {
				return ErrNodeBusy
			}
			return err
		})
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrNodeBusy):
				gone++
			}
		}
		q := quorum(len(m.nodes))
		switch {
		case ok >= q:
			alive[i] = true
		case gone > len(m.nodes)-q:
			alive[i] = false
		default:
			undecided = true
		}
	}
	if undecided {
		return nil, errUndecided
	}
	return alive, nil
}
