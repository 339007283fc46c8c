package scripts

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
)

// RenewItem is one hold in a renewal batch.
type RenewItem struct {
	Key   string
	Owner string // the hash field that records the hold
	Token uint64 // 0: do not check the token
	// Prefix is, for RWLockRenew, the read hold's timeout-key prefix (""
	// for a write hold); for SemRenew, the semaphore's permits hash.
	Prefix string
	// Phase is, for RWLockRenew, the lock's phase key (its token, see
	// rwlock_lib.lua).
	Phase string
	// Info is the hold's holder-info hash (see redisync.HolderInfo), whose
	// lease a script that takes it (LockRenew, SemRenew) extends with the
	// hold's; "": none.
	Info string
}

// RenewScript is a batch renewal script: KEYS are the holds' keys, ARGV[1]
// the lease, then each hold's arguments.
type RenewScript struct {
	src    *source
	prefix bool // each hold also passes its timeout-key prefix
	phase  bool // ... and its phase key (rwlock)
	info   bool // KEYS[n+i] is hold i's holder-info hash (its own key for none)
}

func newRenewScript(src string, prefix bool) *RenewScript {
	return &RenewScript{src: newSource(src, func(src string) string { return withLib(guardKeyType(src)) }), prefix: prefix}
}

// withPhase marks a script that takes each hold's phase key after its prefix.
func (s *RenewScript) withPhase() *RenewScript { s.phase = true; return s }

// withInfo marks a script that takes each hold's holder-info hash.
func (s *RenewScript) withInfo() *RenewScript { s.info = true; return s }

// The renewal scripts.
var (
	LockRenew   = rlockRenew  // rlock and fairlock holds
	RWLockRenew = rwlockRenew // rwlock read and write holds
	SemRenew    = semRenew    // semaphore permits
	// RedlockRenewBatch renews Redlock holds on one node (Item.Key: the lock
	// key, Item.Owner: the owner id).
	RedlockRenewBatch = redlockRenew
)

// Command builds one EVALSHA of the script for a batch of holds that share a
// hash slot (or a single server); an EVAL while the script's digest is not
// yet known (see DoMulti).
func (s *RenewScript) Command(c rueidis.Client, leaseMs string, items []RenewItem) rueidis.Completed {
	keys, args := s.args(leaseMs, items)
	return s.src.command(c, keys, args)
}

// DoMulti sends commands built by Command in one DoMulti; while the
// script's digest is not known, with the SCRIPT LOAD that learns it,
// routed to slotKey's node (any key of the batch; see source).
func (s *RenewScript) DoMulti(ctx context.Context, c rueidis.Client, slotKey string, cmds ...rueidis.Completed) []rueidis.RedisResult {
	return s.src.doMulti(ctx, c, slotKey, cmds...)
}

// EvalCommand builds the same batch as an EVAL, for a node whose script
// cache lost the script (NOSCRIPT after a restart or SCRIPT FLUSH); EVAL
// also loads it again. Batches sent together with DoMulti fall back
// together, in one more round trip.
func (s *RenewScript) EvalCommand(c rueidis.Client, leaseMs string, items []RenewItem) rueidis.Completed {
	keys, args := s.args(leaseMs, items)
	return s.src.eval(c, keys, args)
}

// exec runs the script once for items (EVALSHA, EVAL on NOSCRIPT).
func (s *RenewScript) exec(ctx context.Context, c rueidis.Client, leaseMs string, items []RenewItem) rueidis.RedisResult {
	keys, args := s.args(leaseMs, items)
	return s.src.exec(ctx, c, keys, args)
}

func (s *RenewScript) args(leaseMs string, items []RenewItem) (keys, args []string) {
	per := 2
	if s.prefix {
		per = 3
	}
	if s.phase {
		per++
	}
	keys = make([]string, len(items))
	args = make([]string, 1, 1+per*len(items))
	args[0] = leaseMs
	if s.info {
		keys = make([]string, 2*len(items))
	}
	for i, it := range items {
		keys[i] = it.Key
		if s.info {
			keys[len(items)+i] = it.Key
			if it.Info != "" {
				keys[len(items)+i] = it.Info
			}
		}
		args = append(args, it.Owner, strconv.FormatUint(it.Token, 10))
		if s.prefix {
			args = append(args, it.Prefix)
		}
		if s.phase {
			args = append(args, it.Phase)
		}
	}
	return keys, args
}

// ParseRenew reads a renewal reply: alive[i] for items[i].
func ParseRenew(res rueidis.RedisResult, n int) ([]bool, error) {
	vals, err := res.AsIntSlice()
	if err != nil {
		return nil, err
	}
	if len(vals) != n {
		return nil, fmt.Errorf("scripts: renewal reply has %d entries for %d holds", len(vals), n)
	}
	alive := make([]bool, n)
	for i, v := range vals {
		alive[i] = v == 1
	}
	return alive, nil
}
