package redistest

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ReplicaNodeTimeout is the cluster-node-timeout of a Cluster with replicas:
// small, so that a killed master is failed over within a few seconds (a
// master is marked failed after the timeout, and its replica's election
// waits half a second more, plus up to half a second of jitter).
const ReplicaNodeTimeout = 1000 * time.Millisecond

// failoverWithin bounds every role change the helpers wait for: a loaded
// 2-core machine stalls servers for hundreds of ms, and a killed master
// needs a node timeout, a failure report and an election.
const failoverWithin = 30 * time.Second

// StartClusterWithReplicas starts a Redis Cluster of masters (at least 3)
// with replicas replicas each, formed with redis-cli --cluster create
// --cluster-replicas, with cluster-node-timeout ReplicaNodeTimeout. It
// returns when every slot is served, every node reports cluster_state:ok,
// every replica's link to its master is up, and the Cluster is Healthy.
//
// Nodes holds every node; which are masters changes with Failover and
// KillMaster (see Masters, MasterFor and ReplicaOf).
func StartClusterWithReplicas(t testing.TB, masters, replicas int) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redistest: redis-cli not found on PATH (Debian: apt-get install -y redis-tools)")
	}
	nodes := startWith(t, masters*(1+replicas), func(_ int, s *Server) {
		// A full resync (a node back empty, an old master that took writes
		// after a forced failover) starts at once: Redis's diskless sync
		// otherwise waits 5 s for more replicas to join it.
		s.extra = []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(ReplicaNodeTimeout.Milliseconds(), 10),
			"--repl-diskless-sync-delay", "0"}
	})
	c := &Cluster{t: t, Nodes: nodes}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v: %s", err, lastLines(string(out), 5))
	}
	if err := c.waitFor(failoverWithin, "every replica linked", func() error {
		if err := c.ready(); err != nil {
			return err
		}
		if err := c.replicasLinked(); err != nil || replicas == 0 {
			return err
		}
		// Also as the Cluster's view says (ReplicaOf reads it): beside a
		// second make test a test asked right after the start and got no
		// replica for a master.
		return c.Healthy()
	}); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, master string // master: the master's id, "-" for a master
	flags            []string
	slots            []string
}

func (n clusterNode) is(flag string) bool {
	for _, f := range n.flags {
		if f == flag {
			return true
		}
	}
	return false
}

// alive reports whether the server's process runs (not killed).
func (s *Server) alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// topology reads CLUSTER NODES from the first live node.
func (c *Cluster) topology() ([]clusterNode, error) {
	for _, s := range c.Nodes {
		if s.alive() {
			return nodesOf(s)
		}
	}
	return nil, errors.New("no live node")
}

// nodesOf reads CLUSTER NODES as s sees it.
func nodesOf(s *Server) ([]clusterNode, error) {
	out, err := rawCommand(s.Addr(), "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	var nodes []clusterNode
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		nodes = append(nodes, clusterNode{id: f[0], addr: addr, flags: strings.Split(f[2], ","), master: f[3], slots: f[8:]})
	}
	return nodes, nil
}

// agree: every live node sees master as a master serving slots and, unless
// replica is nil, replica as its replica.
func (c *Cluster) agree(master, replica *Server) error {
	for _, s := range c.Nodes {
		if !s.alive() {
			continue
		}
		nodes, err := nodesOf(s)
		if err != nil {
			return err
		}
		id := ""
		for _, n := range nodes {
			if n.addr == master.Addr() && n.is("master") && !n.is("fail") && len(n.slots) > 0 {
				id = n.id
			}
		}
		if id == "" {
			return fmt.Errorf("%s does not see %s as a master yet", s.Addr(), master.Addr())
		}
		if replica == nil {
			continue
		}
		follows := false
		for _, n := range nodes {
			follows = follows || n.addr == replica.Addr() && n.master == id && n.is("slave") && !n.is("fail")
		}
		if !follows {
			return fmt.Errorf("%s does not see %s following %s yet", s.Addr(), replica.Addr(), master.Addr())
		}
	}
	return nil
}

func (c *Cluster) server(addr string) *Server {
	for _, s := range c.Nodes {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// Masters returns the live masters that serve slots now.
func (c *Cluster) Masters() []*Server {
	c.t.Helper()
	nodes, err := c.topology()
	if err != nil {
		c.t.Fatalf("redistest: %v", err)
	}
	var out []*Server
	for _, n := range nodes {
		if n.is("master") && !n.is("fail") && len(n.slots) > 0 {
			if s := c.server(n.addr); s != nil && s.alive() {
				out = append(out, s)
			}
		}
	}
	return out
}

// ReplicaOf returns a live replica of master (nil if it has none), as the
// Cluster sees it now.
func (c *Cluster) ReplicaOf(master *Server) *Server {
	c.t.Helper()
	r, err := c.replicaOf(master)
	if err != nil {
		c.t.Fatalf("redistest: %v", err)
	}
	return r
}

func (c *Cluster) replicaOf(master *Server) (*Server, error) {
	nodes, err := c.topology()
	if err != nil {
		return nil, err
	}
	id := ""
	for _, n := range nodes {
		if n.addr == master.Addr() {
			id = n.id
		}
	}
	for _, n := range nodes {
		if id != "" && n.master == id && n.is("slave") && !n.is("fail") {
			if s := c.server(n.addr); s != nil && s.alive() {
				return s, nil
			}
		}
	}
	return nil, nil
}

// masterFor returns the master that serves key's slot, by CLUSTER NODES of
// a live node.
func (c *Cluster) masterFor(key string) (*Server, error) {
	var live *Server
	for _, s := range c.Nodes {
		if s.alive() {
			live = s
			break
		}
	}
	if live == nil {
		return nil, errors.New("no live node")
	}
	out, err := rawCommand(live.Addr(), "CLUSTER", "KEYSLOT", key)
	if err != nil {
		return nil, err
	}
	slot, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return nil, fmt.Errorf("CLUSTER KEYSLOT %q: %q", key, out)
	}
	nodes, err := c.topology()
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if !n.is("master") || n.is("fail") {
			continue
		}
		for _, r := range n.slots {
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil && slot >= a && slot <= b {
				if s := c.server(n.addr); s != nil {
					return s, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("no master serves slot %d", slot)
}

// MasterFor returns the master that serves key's slot now.
func (c *Cluster) MasterFor(key string) *Server {
	c.t.Helper()
	s, err := c.masterFor(key)
	if err != nil {
		c.t.Fatalf("redistest: %v", err)
	}
	return s
}

// Failover makes the replica of key's master take over with CLUSTER
// FAILOVER (FORCE when force: the replica does not wait to catch up with
// its master, so writes the replica had not received are lost), and waits
// until the roles have switched, the old master follows the new one with
// its link up, and the Cluster is ok. It returns the new master. Safe to
// call from any goroutine (it reports errors instead of failing the test).
func (c *Cluster) Failover(key string, force bool) (*Server, error) {
	master, err := c.masterFor(key)
	if err != nil {
		return nil, err
	}
	replica, err := c.replicaOf(master)
	if err != nil || replica == nil {
		return nil, fmt.Errorf("failover of %s: no replica (%v)", master.Addr(), err)
	}
	args := []string{"CLUSTER", "FAILOVER"}
	if force {
		args = append(args, "FORCE")
	}
	if _, err := rawCommand(replica.Addr(), args...); err != nil {
		return nil, err
	}
	if err := c.waitFor(failoverWithin, "roles switched after "+strings.Join(args, " "), func() error {
		if err := c.isMaster(replica); err != nil {
			return err
		}
		if err := c.agree(replica, master); err != nil {
			return err
		}
		if err := c.ready(); err != nil {
			return err
		}
		return c.replicasLinked()
	}); err != nil {
		return nil, err
	}
	return replica, nil
}

// KillMaster kills (SIGKILL) the master of key's slot and waits until its
// replica has been promoted and the Cluster is ok again. It returns the
// killed server, to Rejoin later; until then its master has no replica.
func (c *Cluster) KillMaster(key string) (killed, promoted *Server, err error) {
	master, err := c.masterFor(key)
	if err != nil {
		return nil, nil, err
	}
	replica, err := c.replicaOf(master)
	if err != nil || replica == nil {
		return nil, nil, fmt.Errorf("kill %s: no replica to promote (%v)", master.Addr(), err)
	}
	master.Kill()
	err = c.waitFor(failoverWithin, "replica promoted after the master was killed", func() error {
		if err := c.isMaster(replica); err != nil {
			return err
		}
		if err := c.agree(replica, nil); err != nil {
			return err
		}
		return c.ready()
	})
	return master, replica, err
}

// Rejoin restarts a killed node (empty: nothing persists, but its
// nodes.conf keeps its identity) and waits until it follows a master with
// its link up and the Cluster is ok.
func (c *Cluster) Rejoin(s *Server) error {
	if err := s.RestartMain(); err != nil {
		return err
	}
	return c.waitFor(failoverWithin, "the restarted node rejoined as a replica", func() error {
		role, err := rawCommand(s.Addr(), "ROLE")
		if err != nil || !strings.HasPrefix(role, "slave") {
			return fmt.Errorf("%s: ROLE %q %v", s.Addr(), firstLine(role), err)
		}
		for _, o := range c.Nodes {
			if !o.alive() {
				continue
			}
			nodes, err := nodesOf(o)
			if err != nil {
				return err
			}
			for _, n := range nodes {
				if n.addr == s.Addr() && (!n.is("slave") || n.is("fail") || n.is("fail?")) {
					return fmt.Errorf("%s sees %s as %v", o.Addr(), s.Addr(), n.flags)
				}
			}
		}
		if err := c.ready(); err != nil {
			return err
		}
		return c.replicasLinked()
	})
}

// PauseReplica stops (SIGSTOP) the replica of key's master, so it lags:
// WAIT on the master counts it no more. Resume it with its Resume.
func (c *Cluster) PauseReplica(key string) (*Server, error) {
	master, err := c.masterFor(key)
	if err != nil {
		return nil, err
	}
	replica, err := c.replicaOf(master)
	if err != nil || replica == nil {
		return nil, fmt.Errorf("pause: %s has no replica (%v)", master.Addr(), err)
	}
	replica.Pause()
	return replica, nil
}

// Healthy reports (nil) whether the Cluster is whole: every live node ok,
// every master with a live replica whose link is up, and every live node
// seeing every other live node without a failure flag. Safe from any
// goroutine.
func (c *Cluster) Healthy() error {
	if err := c.ready(); err != nil {
		return err
	}
	if err := c.replicasLinked(); err != nil {
		return err
	}
	for _, s := range c.Nodes {
		if !s.alive() {
			continue
		}
		nodes, err := nodesOf(s)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if o := c.server(n.addr); o != nil && o.alive() && (n.is("fail") || n.is("fail?")) {
				return fmt.Errorf("%s sees %s as %v", s.Addr(), n.addr, n.flags)
			}
		}
	}
	masters := 0
	nodes, err := c.topology()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.is("master") && len(n.slots) > 0 {
			masters++
			if m := c.server(n.addr); m == nil || !m.alive() {
				return fmt.Errorf("master %s is not running", n.addr)
			} else if r, err := c.replicaOf(m); err != nil || r == nil {
				return fmt.Errorf("master %s has no live replica (%v)", n.addr, err)
			}
		}
	}
	if masters == 0 {
		return errors.New("no master")
	}
	return nil
}

// CutReplica cuts the replica of key's master off its master's stream
// while both keep running: the replica is given credentials for a user
// the master does not have (masteruser/masterauth) and its link is
// dropped, so every reconnection fails to authenticate. The master goes on
// taking (and acknowledging) writes the replica never receives — what a
// failover then loses. (Pausing the replica loses nothing: the stream
// waits in its socket buffer.) heal restores the replica's credentials;
// after a failover, heal the promoted node: it keeps the settings.
func (c *Cluster) CutReplica(key string) (replica *Server, heal func() error, err error) {
	master, err := c.masterFor(key)
	if err != nil {
		return nil, nil, err
	}
	replica, err = c.replicaOf(master)
	if err != nil || replica == nil {
		return nil, nil, fmt.Errorf("cut: %s has no replica (%v)", master.Addr(), err)
	}
	for _, args := range [][]string{
		{"CONFIG", "SET", "masteruser", "redistest-cut"},
		{"CONFIG", "SET", "masterauth", "redistest-cut"},
		{"CLIENT", "KILL", "TYPE", "master"},
	} {
		if _, err := rawCommand(replica.Addr(), args...); err != nil {
			return nil, nil, err
		}
	}
	heal = func() error {
		for _, args := range [][]string{{"CONFIG", "SET", "masteruser", ""}, {"CONFIG", "SET", "masterauth", ""}} {
			if _, err := rawCommand(replica.Addr(), args...); err != nil {
				return err
			}
		}
		return nil
	}
	err = c.waitFor(failoverWithin, "the replica's link down", func() error {
		info, err := rawCommand(replica.Addr(), "INFO", "replication")
		if err != nil || !strings.Contains(info, "master_link_status:down") {
			return fmt.Errorf("%s: link still up (%v)", replica.Addr(), err)
		}
		return nil
	})
	return replica, heal, err
}

// isMaster: s says it is a master (ROLE) and serves slots.
func (c *Cluster) isMaster(s *Server) error {
	role, err := rawCommand(s.Addr(), "ROLE")
	if err != nil || !strings.HasPrefix(role, "master") {
		return fmt.Errorf("%s: ROLE %q %v", s.Addr(), firstLine(role), err)
	}
	return nil
}

// replicasLinked: every live replica's link to its master is up, and its
// master counts it.
func (c *Cluster) replicasLinked() error {
	for _, s := range c.Nodes {
		if !s.alive() {
			continue
		}
		info, err := rawCommand(s.Addr(), "INFO", "replication")
		if err != nil {
			return err
		}
		if strings.Contains(info, "role:slave") && !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("%s: replica link not up", s.Addr())
		}
	}
	return nil
}

// ready: every live node reports cluster_state:ok with all 16384 slots ok.
func (c *Cluster) ready() error {
	for _, n := range c.Nodes {
		if !n.alive() {
			continue
		}
		info, err := rawCommand(n.Addr(), "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return fmt.Errorf("%s: cluster not ok", n.Addr())
		}
	}
	return nil
}

func (c *Cluster) waitFor(within time.Duration, what string, cond func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster: not within %v: %s: %v", within, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
