package redlock

import (
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) {
	locktest.Main(m)
}

var bg = locktest.Bg

// cluster is five independent masters and one Client on each.
type masters struct {
	srv     []*redistest.Server
	raw     []rueidis.Client // for assertions
	clients []*redisync.Client
}

func startMasters(t *testing.T, n int, opts ...redisync.Option) *masters {
	t.Helper()
	m := &masters{srv: redistest.StartN(t, n)}
	for _, s := range m.srv {
		m.raw = append(m.raw, s.Client(t))
	}
	m.clients = m.newClients(t, opts...)
	return m
}

// reconnect waits until every client (and the assertion clients) can reach
// node i again about key after a restart: the first command on a connection
// to the old process fails. (rueidis spreads commands over connections by
// the key's slot, so it asks about key itself.)
func (m *masters) reconnect(t *testing.T, i int, key string, clients ...[]*redisync.Client) {
	t.Helper()
	rcs := []rueidis.Client{m.raw[i]}
	for _, cs := range append(clients, m.clients) {
		rcs = append(rcs, locktest.Engine(cs[i]).RC)
	}
	for _, rc := range rcs {
		locktest.Eventually(t, 5*time.Second, func() bool {
			return rc.Do(bg(), rc.B().Exists().Key(key).Build()).Error() == nil
		}, "reconnected")
	}
}

// newClients returns a fresh Client on every master ("another process").
func (m *masters) newClients(t *testing.T, opts ...redisync.Option) []*redisync.Client {
	out := make([]*redisync.Client, len(m.srv))
	for i, s := range m.srv {
		c := redisync.New(s.Client(t), opts...)
		t.Cleanup(func() { c.Close() })
		out[i] = c
	}
	return out
}

// held reports on how many masters key exists.
// (fresh connections: a node may have restarted since the last look).
func (m *masters) held(t *testing.T, key string) int {
	n := 0
	for _, s := range m.srv {
		v, _ := redistest.Do(t, s.Client(t), "EXISTS", key).AsInt64()
		n += int(v)
	}
	return n
}

// subsets lists every subset of {0..n-1} with k members.
func subsets(n, k int) [][]int {
	if k == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for first := 0; first < n; first++ {
		for _, rest := range subsets(n-first-1, k-1) {
			s := []int{first}
			for _, r := range rest {
				s = append(s, first+1+r)
			}
			out = append(out, s)
		}
	}
	return out
}
