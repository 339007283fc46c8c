package redistest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// MasterSet is the name the Sentinels monitor.
const MasterSet = "redistest"

// Sentinel is a master, one replica of it, and Sentinels watching them
// (quorum 2, down after DownAfter), ready when StartSentinel returns.
type Sentinel struct {
	t         testing.TB
	Master    *Server
	Replica   *Server
	Sentinels []*Server
}

// DownAfter is the Sentinels' down-after-milliseconds: how long an instance
// must not answer before a Sentinel thinks it down.
//
// 3 s, not less: under load a shorter one makes Sentinel fail over twice —
// a Sentinel that switched to the promoted replica gets no PONG from it in
// time, marks it down, reaches ODOWN at once, and the Sentinels promote the
// old master, just restarted as the new master's replica (redis/redis#8607
// is the same false positive with 500 ms). It costs 2 s per failover.
const DownAfter = 3 * time.Second

// StartSentinel starts the master, the replica and n Sentinels (n >= 2).
func StartSentinel(t testing.TB, n int) *Sentinel {
	t.Helper()
	master := Start(t)
	replica := startWith(t, 1, func(_ int, s *Server) {
		host, port, _ := strings.Cut(master.Addr(), ":")
		s.extra = []string{"--replicaof", host, port}
	})[0]
	// Setup, not a property: the first sync forks the master, which took
	// over 10 s beside a second make test at load 20-47.
	waitFor(t, 30*time.Second, "replica linked", func() bool {
		info, err := rawCommand(replica.Addr(), "INFO", "replication")
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
	host, port, _ := strings.Cut(master.Addr(), ":")
	sentinels := startWith(t, n, func(_ int, s *Server) {
		s.sentinel = true
		s.extra = []string{
			fmt.Sprintf("sentinel monitor %s %s %s 2", MasterSet, host, port),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", MasterSet, DownAfter.Milliseconds()),
			"sentinel failover-timeout " + MasterSet + " 5000",
			"sentinel parallel-syncs " + MasterSet + " 1",
		}
	})
	sn := &Sentinel{t: t, Master: master, Replica: replica, Sentinels: sentinels}
	for _, s := range sentinels {
		waitFor(t, 20*time.Second, "sentinel sees the replica and the other sentinels", func() bool {
			reps, err1 := rawCommand(s.Addr(), "SENTINEL", "REPLICAS", MasterSet)
			others, err2 := rawCommand(s.Addr(), "SENTINEL", "SENTINELS", MasterSet)
			return err1 == nil && err2 == nil && strings.Contains(reps, strconv.Itoa(replica.port)) &&
				countLines(others, "name") >= n-1
		})
	}
	return sn
}

// Addrs returns the Sentinels' addresses.
func (sn *Sentinel) Addrs() []string {
	out := make([]string, len(sn.Sentinels))
	for i, s := range sn.Sentinels {
		out[i] = s.Addr()
	}
	return out
}

// Client returns a rueidis client that finds the master through the
// Sentinels (and follows failovers), closed by t.Cleanup.
func (sn *Sentinel) Client(t testing.TB) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  sn.Addrs(),
		Sentinel:     rueidis.SentinelOption{MasterSet: MasterSet},
		DisableCache: true,
	})
	if err != nil {
		t.Fatalf("redistest: connect through sentinels: %v", err)
	}
	t.Cleanup(rc.Close)
	return rc
}

// Failover kills the master and waits until the Sentinels have promoted the
// replica; the killed master is not restarted.
func (sn *Sentinel) Failover() {
	sn.t.Helper()
	sn.Master.Kill()
	waitFor(sn.t, 30*time.Second, "sentinels promote the replica", func() bool {
		addr, err := rawCommand(sn.Sentinels[0].Addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterSet)
		if err != nil || !strings.Contains(addr, strconv.Itoa(sn.Replica.port)) {
			return false
		}
		role, err := rawCommand(sn.Replica.Addr(), "ROLE")
		return err == nil && strings.HasPrefix(role, "master")
	})
}

// Failovers returns how many failovers the Sentinels have made: the most
// "+switch-master" lines any one Sentinel has logged (each logs one per
// master change it learns of). A test that makes one failover checks it is
// still 1, so that a second, spurious one (see DownAfter) is named as such
// instead of showing up as a wrong result. (Not the configuration epoch: a
// failover whose first leader election split is made with epoch 2.) The
// leader names the promoted replica a moment before it logs the switch, so
// just after Failover this may still be 0.
func (sn *Sentinel) Failovers() int {
	most := 0
	for _, s := range sn.Sentinels {
		most = max(most, strings.Count(s.Log(), "+switch-master "))
	}
	return most
}

func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("redistest: not within %v: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// countLines counts the lines of redis-cli output equal to s.
func countLines(out, s string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == s {
			n++
		}
	}
	return n
}
