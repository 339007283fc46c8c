package engine

import (
	"context"

	"github.com/redisync/redisync/internal/obs"
)

// Check runs the Client's Preflight (its eviction check) for an
// acquisition that does not go through Acquire or TryOnce — a multilock's
// one-script round takes rlock holds with a script of its own — and names
// the acquisition in a refusal as they do (`rlock "name": acquiring the
// lock: <refusal>`).
func (e *Engine) Check(ctx context.Context, target obs.Target) error {
	return e.preflight(ctx, target, doingAcquire)
}
