package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Cluster is a Redis Cluster of masters without replicas, formed with
// redis-cli --cluster create: every slot is served, and the Cluster is
// ready (cluster_state:ok on every node) when StartCluster returns.
type Cluster struct {
	t     testing.TB
	Nodes []*Server
}

// StartCluster starts masters cluster-enabled servers (at least 3, as
// redis-cli requires) and joins them into one Cluster.
func StartCluster(t testing.TB, masters int) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redistest: redis-cli not found on PATH (Debian: apt-get install -y redis-tools)")
	}
	nodes := startWith(t, masters, func(_ int, s *Server) {
		s.extra = []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"}
	})
	c := &Cluster{t: t, Nodes: nodes}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v: %s", err, lastLines(string(out), 5))
	}
	c.WaitReady()
	return c
}

// Addrs returns every node's address.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// Client returns a rueidis Cluster client for the whole Cluster, closed by
// t.Cleanup.
func (c *Cluster) Client(t testing.TB) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs(), DisableCache: true})
	if err != nil {
		t.Fatalf("redistest: connect to cluster: %v", err)
	}
	t.Cleanup(rc.Close)
	if rc.Mode() != rueidis.ClientModeCluster {
		t.Fatalf("redistest: client is not in cluster mode")
	}
	return rc
}

// WaitReady waits until every live node reports cluster_state:ok and
// agrees that all 16384 slots are served.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	if err := c.waitFor(20*time.Second, "cluster ready", c.ready); err != nil {
		c.t.Fatalf("redistest: %v", err)
	}
}

// NodeFor returns the node that serves key's slot now (as node 0 sees it).
func (c *Cluster) NodeFor(key string) *Server {
	c.t.Helper()
	out, err := rawCommand(c.Nodes[0].Addr(), "CLUSTER", "KEYSLOT", key)
	if err != nil {
		c.t.Fatalf("redistest: CLUSTER KEYSLOT: %v", err)
	}
	slot, _ := strconv.Atoi(strings.TrimSpace(out))
	nodes, err := rawCommand(c.Nodes[0].Addr(), "CLUSTER", "NODES")
	if err != nil {
		c.t.Fatalf("redistest: CLUSTER NODES: %v", err)
	}
	// Lines: <id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <state> <slot ranges...>
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		for _, r := range f[8:] {
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || slot < a || slot > b {
				continue
			}
			for _, n := range c.Nodes {
				if n.Addr() == addr {
					return n
				}
			}
		}
	}
	c.t.Fatalf("redistest: no node serves slot %d", slot)
	return nil
}

// MoveSlot migrates key's slot, with its keys, from the node that serves it
// to the next node, the way redis-cli --cluster reshard does (SETSLOT
// IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE everywhere). It returns the new
// owner.
func (c *Cluster) MoveSlot(key string) *Server {
	c.t.Helper()
	from := c.NodeFor(key)
	var to *Server
	masters := c.Masters() // with replicas, only a master can take a slot
	for i, n := range masters {
		if n == from {
			to = masters[(i+1)%len(masters)]
		}
	}
	slot, _ := rawCommand(from.Addr(), "CLUSTER", "KEYSLOT", key)
	slot = strings.TrimSpace(slot)
	fromID, _ := rawCommand(from.Addr(), "CLUSTER", "MYID")
	toID, _ := rawCommand(to.Addr(), "CLUSTER", "MYID")
	fromID, toID = strings.TrimSpace(fromID), strings.TrimSpace(toID)
	must := func(addr string, args ...string) string {
		out, err := rawCommand(addr, args...)
		if err != nil {
			c.t.Fatalf("redistest: %v on %s: %v", args, addr, err)
		}
		return out
	}
	must(to.Addr(), "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID)
	must(from.Addr(), "CLUSTER", "SETSLOT", slot, "MIGRATING", toID)
	for {
		keys := must(from.Addr(), "CLUSTER", "GETKEYSINSLOT", slot, "100")
		names := strings.Fields(keys)
		if len(names) == 0 {
			break
		}
		host, port, _ := strings.Cut(to.Addr(), ":")
		must(from.Addr(), append([]string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}, names...)...)
	}
	for _, n := range c.Nodes {
		must(n.Addr(), "CLUSTER", "SETSLOT", slot, "NODE", toID)
	}
	c.WaitReady()
	return to
}

// rawCommand runs one command on addr with a short-lived rueidis-free
// connection (redis-cli), returning its raw output.
func rawCommand(addr string, args ...string) (string, error) {
	host, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("redis-cli %v: %v: %s", args, err, out)
	}
	if strings.HasPrefix(string(out), "ERR") || strings.HasPrefix(string(out), "(error)") {
		return string(out), fmt.Errorf("redis-cli %v: %s", args, out)
	}
	return string(out), nil
}
