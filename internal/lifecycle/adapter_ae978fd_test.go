//go:build lifecycle_ae978fd

package lifecycle

import (
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// On the starting commit of issue 12 (ae978fd) every handle was reentrant
// and WithReentrant did not exist: no option stands in for it. To replay
// the model there, copy this directory into a worktree of ae978fd and run
//
//	go test -race -tags lifecycle_ae978fd ./internal/lifecycle -rapid.seed=N
//
// (the default handles then re-enter, which the model reports as defect 11).

func reentrantRlock() []rlock.Option       { return nil }
func reentrantFairlock() []fairlock.Option { return nil }
func reentrantRWLock() []rwlock.Option     { return nil }
