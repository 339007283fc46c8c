package redistest

import (
	"context"
	"testing"
	"time"
)

func TestClusterFormsAndMovesASlot(t *testing.T) {
	c := StartCluster(t, 3)
	rc := c.Client(t)
	ctx := context.Background()
	if err := rc.Do(ctx, rc.B().Set().Key("{k}x").Value("1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	from := c.NodeFor("{k}x")
	to := c.MoveSlot("{k}x")
	if to == from || c.NodeFor("{k}x") != to {
		t.Fatalf("slot did not move")
	}
	v, err := rc.Do(ctx, rc.B().Get().Key("{k}x").Build()).ToString()
	if err != nil || v != "1" {
		t.Fatalf("after the move: %q %v", v, err)
	}
}

func TestSentinelFailsOver(t *testing.T) {
	sn := StartSentinel(t, 3)
	rc := sn.Client(t)
	ctx := context.Background()
	if err := rc.Do(ctx, rc.B().Set().Key("k").Value("1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if n := sn.Failovers(); n != 0 {
		t.Fatalf("failovers before any: %d", n)
	}
	sn.Failover()
	// The leader names the promoted replica before it logs +switch-master
	// (at the failover's end): the count reaches 1 a moment after Failover.
	waitFor(t, 10*time.Second, "a Sentinel logs the failover", func() bool { return sn.Failovers() >= 1 })
	if n := sn.Failovers(); n != 1 {
		t.Fatalf("failovers after one: %d", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := rc.Do(ctx, rc.B().Set().Key("k").Value("2").Build()).Error()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes do not resume after failover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
