package redlock

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/holderinfo"
	"github.com/redisync/redisync/internal/scripts"
)

// The inspection surface every lock kind shares (IsLocked, HoldCount, TTL,
// Holders, ForceUnlock), as a quorum view: each node is read (in parallel,
// each for at most the node timeout), and a value counts as holding the
// lock when a majority of the nodes carry it, as a grant needs. A node that
// does not answer counts for nobody; only when no node answers is its error
// returned.

// nodeView is what one node holds under the lock's name.
type nodeView struct {
	value string        // the key's value ("" when absent)
	ttl   time.Duration // its remaining lease
	info  string        // the value's holder-info record
	err   error
}

// views reads every node; with records, also the holders' records.
func (m *Mutex) views(ctx context.Context, records bool) ([]nodeView, error) {
	if ctx == nil {
		panic("redlock: nil Context")
	}
	if m.nameErr != nil {
		return nil, m.nameErr
	}
	out := make([]nodeView, len(m.nodes))
	m.nodes.each(ctx, m.nodeTimeout, func(ctx context.Context, i int, n *node) {
		out[i] = n.view(ctx, records)
	})
	var failed []error
	for _, v := range out {
		if v.err != nil {
			failed = append(failed, v.err)
		}
	}
	if len(failed) == len(out) {
		return nil, fmt.Errorf("redlock %q: no node gave a reading: %w", m.name, errors.Join(failed...))
	}
	return out, nil
}

func (n *node) view(ctx context.Context, records bool) nodeView {
	rc := n.e.RC
	// The key's type, value and expiry in one no-writes script, which Redis
	// runs under out of memory too (it refuses every command queued in a
	// MULTI then); the records in a second read, so a user whose ACL does
	// not cover the side key still reads the lock (without records).
	typ, pttl, value, err := scripts.KeyRead(ctx, rc, n.keys.Lock, "string")
	if err != nil {
		return nodeView{err: err}
	}
	switch typ {
	case "none":
		return nodeView{}
	case "string":
	default:
		return nodeView{err: &errs.WrongKindError{Key: n.keys.Lock, Found: "a " + typ}}
	}
	if len(value) != 1 {
		return nodeView{err: fmt.Errorf("redlock: unexpected reply of %d values", len(value))}
	}
	if pttl < 0 {
		return nodeView{err: &errs.WrongKindError{Key: n.keys.Lock, Found: "a string without expiry"}}
	}
	v := nodeView{value: value[0], ttl: time.Duration(pttl) * time.Millisecond}
	if !records {
		return v
	}
	// The holder's record alone (HGET of the value's field, not the whole
	// hash). Not a hash (WRONGTYPE), absent or denied: no record.
	if info, err := rc.Do(ctx, rc.B().Hget().Key(n.e.HolderInfoKey(n.keys.Lock)).Field(v.value).Build()).ToString(); err == nil {
		v.info = info
	}
	return v
}

// Holders returns the values that hold the lock on a majority of the
// nodes (at most one, unless the nodes disagree after a failure), each with
// Count = how many nodes carry it, TTL = the shortest lease among them (the
// hold's validity), and the holder's record (Owner is the key's value: the
// owner id and the round that won, "<owner>:<round>"). A node that does
// not answer, or holds something else, counts for nobody.
func (m *Mutex) Holders(ctx context.Context) ([]redisync.Holder, error) {
	return m.holders(ctx, true)
}

// holders is Holders, with or without the holders' records (IsLocked,
// HoldCount and TTL do not show them, so they do not read them).
func (m *Mutex) holders(ctx context.Context, records bool) ([]redisync.Holder, error) {
	views, err := m.views(ctx, records)
	if err != nil {
		return nil, err
	}
	byValue := map[string]*redisync.Holder{}
	for _, v := range views {
		if v.err != nil || v.value == "" {
			continue
		}
		h := byValue[v.value]
		if h == nil {
			h = &redisync.Holder{Owner: v.value, TTL: v.ttl}
			byValue[v.value] = h
		}
		h.Count++
		h.TTL = min(h.TTL, v.ttl)
		if h.Info == nil {
			h.Info = (*redisync.HolderInfo)(holderinfo.Parse(v.info))
		}
	}
	var out []redisync.Holder
	for _, h := range byValue {
		if h.Count >= quorum(len(m.nodes)) {
			out = append(out, *h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Owner < out[j].Owner })
	return out, nil
}

// IsLocked reports whether some value holds the lock on a majority of the
// nodes.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	hs, err := m.holders(ctx, false)
	return len(hs) > 0, err
}

// HoldCount returns 1 when a value of this handle's owner holds the lock
// on a majority of the nodes, else 0 (a Redlock's nodes keep no count:
// re-entry, WithReentrant, is counted by the handle).
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	hs, err := m.holders(ctx, false)
	for _, h := range hs {
		if strings.HasPrefix(h.Owner, m.owner+":") {
			return 1, err
		}
	}
	return 0, err
}

// TTL returns the validity of the current hold (the shortest lease among
// the majority that carries it), 0 when the lock is not held.
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	hs, err := m.holders(ctx, false)
	var ttl time.Duration
	for _, h := range hs {
		ttl = max(ttl, h.TTL)
	}
	return ttl, err
}

// ForceUnlock deletes the lock's key on every node whoever holds it, and
// reports whether any node had one. A holder finds out at its next renewal.
// Errors of the nodes that failed are joined; the others' deletes stand.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if ctx == nil {
		panic("redlock: nil Context")
	}
	if m.nameErr != nil {
		return false, m.nameErr
	}
	deleted := make([]bool, len(m.nodes))
	failed := make([]error, len(m.nodes))
	m.nodes.each(ctx, m.nodeTimeout, func(ctx context.Context, i int, n *node) {
		deleted[i], failed[i] = engine.WithInfoKey(n.e, m.name, func(info string) (bool, error) {
			k := n.keys
			k.Info = info
			return scripts.RedlockForceUnlock(ctx, n.e.RC, &k)
		})
	})
	found := false
	for _, d := range deleted {
		found = found || d
	}
	if err := errors.Join(failed...); err != nil {
		return found, fmt.Errorf("redlock %q: force unlock: %w", m.name, err)
	}
	return found, nil
}
