package keys

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// rateOf reads (limiter, key) back from a rate limiter's key, or false.
func rateOf(k string) (limiter, key string, ok bool) {
	rest, ok := strings.CutPrefix(k, RatePrefix+":{")
	if !ok {
		return "", "", false
	}
	end := strings.IndexByte(rest, '}')
	if end < 0 || !strings.HasPrefix(rest[end:], "}:") {
		return "", "", false
	}
	rest = rest[end+2:]
	colon := strings.IndexByte(rest, ':')
	n, err := strconv.Atoi(rest[:max(colon, 0)])
	if colon < 0 || err != nil || n < 0 || len(rest) < colon+1+n+1 || rest[colon+1+n] != ':' {
		return "", "", false
	}
	return rest[colon+1 : colon+1+n], rest[colon+1+n+1:], true
}

// A rate limiter's key gives back its limiter and identity (so no two
// pairs share one), is in the identity's slot when it has a slot string,
// and is reserved: no lock can be named after it.
func TestRateKeysAreInjectiveAndInTheSlotOfTheIdentity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l, k := names().Draw(t, "limiter"), names().Draw(t, "key")
		rk := Rate(l, k)
		bl, bk, ok := rateOf(rk)
		if !ok || bl != l || bk != k {
			t.Fatalf("key %q of (%q, %q) gives back (%q, %q, %v)", rk, l, k, bl, bk, ok)
		}
		if slot, has := slotString(k); has && slot != "" && Slot(rk) != Slot(k) {
			t.Fatalf("key %q is not in the slot of %q", rk, k)
		}
		if Reserved(rk) == "" {
			t.Fatalf("key %q is not reserved", rk)
		}
	})
}

func FuzzRate(f *testing.F) {
	for _, s := range [][2]string{{"api", "user:1"}, {"a:1", "b"}, {"a", "1:b"}, {"x", "{x}"}, {"{x}", "x"}, {"", "}"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, l, k string) {
		rl, rk, ok := rateOf(Rate(l, k))
		require.True(t, ok && rl == l && rk == k, "(%q, %q) -> %q -> (%q, %q)", l, k, Rate(l, k), rl, rk)
	})
}
