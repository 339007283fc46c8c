package scripts

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/rueidis"
)

// RenewItem is one hold in a renewal batch.
type RenewItem struct {
	Key   string
	Owner string // the hash field that records the hold
	Token uint64 // 0: do not check the token
	// TokenSuffix follows the token in TokenArg (not a token of 0): for
	// RWLockRenew, the rest of the phase key's value the hold expects
	// (" r" for a read hold, " w <owner>:write" for a write hold).
	TokenSuffix string
	// Prefix is, for RWLockRenew, the read hold's first timeout key
	// ("<prefix>:1"; "" for a write hold).
	Prefix string
	// Phase is, for RWLockRenew, the lock's phase key (its token, see
	// rwlock_lib.lua).
	Phase string
	// Info is the hold's holder-info hash (see redisync.HolderInfo), where
	// HolderRecord writes the hold's record; "": none. Renewals do not
	// touch it.
	Info string

	tokenArg string // Token in decimal and TokenSuffix, formatted once
	// expiryArg is, for a script that reports expiries (SemRenew), the
	// hold's expiry as the last renewal that found it reported it (server
	// ms, decimal); "": none yet. Owned by the round that renews the item.
	expiryArg string
}

// TokenArg is the item's token as the scripts take it, formatted on first
// use and kept (an item renewed every few seconds costs no garbage). The
// watchdog renews an item in one round at a time, so the first use is not
// shared.
func (it *RenewItem) TokenArg() string {
	if it.tokenArg == "" {
		it.tokenArg = strconv.FormatUint(it.Token, 10)
		if it.Token != 0 {
			it.tokenArg += it.TokenSuffix
		}
	}
	return it.tokenArg
}

// RenewScript is a batch renewal script: KEYS are the holds' keys, ARGV[1]
// the lease, then each hold's arguments.
type RenewScript struct {
	src     *source  // assembled at first use (see source)
	noToken bool     // each hold passes no token (semaphore permits: ids are never reused)
	prefix  bool     // each hold also passes its timeout-key prefix
	phase   bool     // ... and its phase key (rwlock)
	expiry  bool     // ... and its last reported expiry, and the reply reports the new one
	head    []string // arguments after the lease, before the holds' (see WithHead)
	// tokenFirst: each hold passes its token, and its owner only when
	// the token is 0 (rlock_renew.lua: the token alone identifies a hold).
	tokenFirst bool
}

// newRenewScript is a renewal script that calls helpers of lib.lua.
func newRenewScript(src string, prefix bool) *RenewScript {
	return &RenewScript{src: newSource(src, withLib), prefix: prefix}
}

// bareRenewScript is a renewal script that calls no helper: sent as
// written, with no prelude to run on each call.
func bareRenewScript(src string, prefix bool) *RenewScript {
	return &RenewScript{src: newSource(src, hoistShebang), prefix: prefix}
}

// withPhase marks a script that takes each hold's phase key after its prefix.
func (s *RenewScript) withPhase() *RenewScript { s.phase = true; return s }

// withTokenFirst marks a script whose holds pass their token, and their
// owner only after a token of 0.
func (s *RenewScript) withTokenFirst() *RenewScript { s.tokenFirst = true; return s }

// withoutToken marks a script that takes no token after each hold's owner.
func (s *RenewScript) withoutToken() *RenewScript { s.noToken = true; return s }

// WithHead returns s taking args after the lease and before the holds'
// own: the same script (its digest is learned once). SemRenew takes the
// prefixes of the holders and permits keys' names (internal/keys).
func (s *RenewScript) WithHead(args ...string) *RenewScript {
	c := *s
	c.head = args
	return &c
}

// withExpiry marks a script that takes each hold's last reported expiry
// after its other arguments ("0" for none) and replies with the new one
// for each live hold (see ParseRenew).
func (s *RenewScript) withExpiry() *RenewScript { s.expiry = true; return s }

// The renewal scripts.
var (
	LockRenew   = rlockRenew  // rlock and fairlock holds
	RWLockRenew = rwlockRenew // rwlock read and write holds
	SemRenew    = semRenew    // semaphore permits
	// RedlockRenewBatch renews Redlock holds on one node (Item.Key: the lock
	// key, Item.Owner: the owner id).
	RedlockRenewBatch = redlockRenew
)

// Command builds one EVALSHA of the script for a batch of n holds that
// share a hash slot (or a single server); item(i) is hold i. An EVAL while
// the script's digest is not yet known (see DoMulti).
func (s *RenewScript) Command(c rueidis.Client, leaseMs string, n int, item func(int) *RenewItem) rueidis.Completed {
	b := s.args(leaseMs, n, item)
	defer b.free()
	return s.src.command(c, b.keys, b.args)
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
func (s *RenewScript) EvalCommand(c rueidis.Client, leaseMs string, n int, item func(int) *RenewItem) rueidis.Completed {
	b := s.args(leaseMs, n, item)
	defer b.free()
	return s.src.eval(c, b.keys, b.args)
}

// exec runs the script once for a batch (EVALSHA, EVAL on NOSCRIPT).
func (s *RenewScript) exec(ctx context.Context, c rueidis.Client, leaseMs string, n int, item func(int) *RenewItem) rueidis.RedisResult {
	b := s.args(leaseMs, n, item)
	defer b.free()
	return s.src.exec(ctx, c, b.keys, b.args)
}

// argBuf holds a batch's keys and arguments while its command is built
// (the builder copies them): reused through argBufs, so a renewal round
// makes no slices per hold.
type argBuf struct{ keys, args []string }

var argBufs = sync.Pool{New: func() any { return new(argBuf) }}

func (b *argBuf) free() {
	clear(b.keys)
	clear(b.args)
	b.keys, b.args = b.keys[:0], b.args[:0]
	argBufs.Put(b)
}

func (s *RenewScript) args(leaseMs string, n int, item func(int) *RenewItem) *argBuf {
	b := argBufs.Get().(*argBuf)
	b.args = append(b.args, leaseMs)
	b.args = append(b.args, s.head...)
	for i := range n {
		it := item(i)
		b.keys = append(b.keys, it.Key)
		if s.tokenFirst {
			b.args = append(b.args, it.TokenArg())
			if it.Token == 0 {
				b.args = append(b.args, it.Owner)
			}
			continue
		}
		b.args = append(b.args, it.Owner)
		if !s.noToken {
			b.args = append(b.args, it.TokenArg())
		}
		if s.prefix {
			b.args = append(b.args, it.Prefix)
		}
		if s.phase {
			b.args = append(b.args, it.Phase)
		}
		if s.expiry {
			b.args = append(b.args, cmp.Or(it.expiryArg, "0"))
		}
	}
	return b
}

// ParseRenew reads a renewal reply of s for the batch of n holds that
// item(i) names: alive[i] for hold i. A reply is one string with a byte
// per hold, '1' for a live hold and '0' for a gone one (see
// rlock_renew.lua): one message to parse however many holds the batch
// has. A script that reports expiries replies with the batch's expiry
// before those bytes, and the rare other expiries after them (see
// parseExpiries); the expiry is kept in the item for its next renewal
// (holds renewed in one call share one string).
func (s *RenewScript) ParseRenew(res rueidis.RedisResult, n int, item func(int) *RenewItem) ([]bool, error) {
	return s.ParseRenewInto(nil, res, n, item)
}

// ParseRenewInto is ParseRenew appending to into (a round reuses one
// array for all its calls).
func (s *RenewScript) ParseRenewInto(into []bool, res rueidis.RedisResult, n int, item func(int) *RenewItem) ([]bool, error) {
	str, err := res.ToString() // the reply's own string: no copy
	if err != nil {
		return into, err
	}
	if s.expiry {
		return parseExpiries(into, str, n, item)
	}
	if len(str) != n {
		return into, fmt.Errorf("scripts: renewal reply has %d entries for %d holds", len(str), n)
	}
	alive := slices.Grow(into, n)
	for i := range len(str) {
		alive = append(alive, str[i] == '1')
	}
	return alive, nil
}

// parseExpiries reads the reply of a script that reports expiries
// (sem_renew.lua): "<expiry> <flags>" and then " <other>" for each flag
// '2', in order. Flag '1': the hold is live at <expiry>, the batch's;
// '2': live at the next <other> (its expiry was already past the batch's);
// '0': gone.
func parseExpiries(into []bool, str string, n int, item func(int) *RenewItem) ([]bool, error) {
	bad := func() ([]bool, error) {
		return into, fmt.Errorf("scripts: renewal reply %.40q is not an expiry and %d holds", str, n)
	}
	sp := strings.IndexByte(str, ' ')
	if sp <= 0 || len(str) < sp+1+n {
		return bad()
	}
	flags, rest := str[sp+1:sp+1+n], str[sp+1+n:]
	var batch string // the batch's expiry, copied once: items keep no reply alive
	alive := slices.Grow(into, n)
	for i := range n {
		switch flags[i] {
		case '0':
			alive = append(alive, false)
			continue
		case '1':
			if batch == "" {
				batch = strings.Clone(str[:sp])
			}
			item(i).expiryArg = batch
		case '2':
			if len(rest) < 2 || rest[0] != ' ' {
				return bad()
			}
			end := strings.IndexByte(rest[1:], ' ') + 1
			if end == 0 {
				end = len(rest)
			}
			item(i).expiryArg = strings.Clone(rest[1:end])
			rest = rest[end:]
		default:
			return bad()
		}
		alive = append(alive, true)
	}
	if rest != "" {
		return bad()
	}
	return alive, nil
}
