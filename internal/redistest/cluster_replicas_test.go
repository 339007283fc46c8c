package redistest

import (
	"context"
	"testing"
	"time"
)

// The kit's Cluster with replicas: formed 3 × 1, every helper switches the
// roles it says, and the key written before survives each (replicated:
// the helpers wait for the links first, and a WAIT confirms the copy).
func TestClusterWithReplicasFailsOver(t *testing.T) {
	c := StartClusterWithReplicas(t, 3, 1)
	if m := c.Masters(); len(m) != 3 {
		t.Fatalf("want 3 masters, got %d", len(m))
	}
	for _, m := range c.Masters() {
		if c.ReplicaOf(m) == nil {
			t.Fatalf("master %s has no replica", m.Addr())
		}
	}
	rc := c.Client(t)
	ctx := context.Background()
	const key = "{k}x"
	res := rc.DoMulti(ctx, rc.B().Set().Key(key).Value("1").Build(), rc.B().Wait().Numreplicas(1).Timeout(5000).Build())
	if n, err := res[1].AsInt64(); err != nil || n != 1 {
		t.Fatalf("WAIT on the key's master: %d %v", n, err)
	}
	get := func(when string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second) // the client learns the new master at a MOVED or a refresh
		for {
			v, err := rc.Do(ctx, rc.B().Get().Key(key).Build()).ToString()
			if err == nil && v == "1" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: GET %q %v", when, v, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, force := range []bool{false, true} {
		old := c.MasterFor(key)
		promoted, err := c.Failover(key, force)
		if err != nil {
			t.Fatal(err)
		}
		if promoted == old || c.MasterFor(key) != promoted || c.ReplicaOf(promoted) != old {
			t.Fatalf("force=%v: roles did not switch: old %s promoted %s master %s replica %v", force, old.Addr(), promoted.Addr(), c.MasterFor(key).Addr(), c.ReplicaOf(promoted))
		}
		get("after CLUSTER FAILOVER")
	}
	killed, promoted, err := c.KillMaster(key)
	if err != nil {
		t.Fatal(err)
	}
	if c.MasterFor(key) != promoted || killed == promoted {
		t.Fatal("the replica was not promoted")
	}
	get("after the master was killed")
	if err := c.Rejoin(killed); err != nil {
		t.Fatal(err)
	}
	if c.ReplicaOf(promoted) != killed {
		t.Fatal("the killed master did not come back as the replica")
	}
	replica, err := c.PauseReplica(key)
	if err != nil {
		t.Fatal(err)
	}
	res = rc.DoMulti(ctx, rc.B().Set().Key(key).Value("2").Build(), rc.B().Wait().Numreplicas(1).Timeout(200).Build())
	replica.Resume()
	if n, err := res[1].AsInt64(); err != nil || n != 0 {
		t.Fatalf("WAIT with the replica paused: %d %v, want 0", n, err)
	}
}

// CutReplica: writes the master acknowledges no longer reach the replica
// (WAIT counts none), and heal links it again.
func TestClusterCutReplica(t *testing.T) {
	c := StartClusterWithReplicas(t, 3, 1)
	rc := c.Client(t)
	ctx := context.Background()
	const key = "{k}x"
	replica, heal, err := c.CutReplica(key)
	if err != nil {
		t.Fatal(err)
	}
	res := rc.DoMulti(ctx, rc.B().Set().Key(key).Value("1").Build(), rc.B().Wait().Numreplicas(1).Timeout(300).Build())
	if n, err := res[1].AsInt64(); err != nil || n != 0 {
		t.Fatalf("WAIT with the replica cut off: %d %v, want 0", n, err)
	}
	time.Sleep(300 * time.Millisecond)
	rr := replica.Client(t)
	got := rr.DoMulti(ctx, rr.B().Readonly().Build(), rr.B().Exists().Key(key).Build())
	if n, err := got[1].AsInt64(); err != nil || n != 0 {
		t.Fatalf("the cut replica has the key: %d %v", n, err)
	}
	if err := heal(); err != nil {
		t.Fatal(err)
	}
	res = rc.DoMulti(ctx, rc.B().Set().Key(key).Value("2").Build(), rc.B().Wait().Numreplicas(1).Timeout(10000).Build())
	if n, err := res[1].AsInt64(); err != nil || n != 1 {
		t.Fatalf("WAIT after heal: %d %v, want 1", n, err)
	}
}
