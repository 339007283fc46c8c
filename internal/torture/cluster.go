package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
)

// ClusterScenarios are the nemeses of a Redis Cluster with replicas
// (Config.Cluster, e.g. redistest.StartClusterWithReplicas(t, 3, 1)); the
// fault strikes the shard of one of the run's names:
//
//   - cluster-failover: CLUSTER FAILOVER on the replica (graceful: the
//     master stops writes until the replica has caught up, so nothing
//     acknowledged is lost);
//   - cluster-failover-force: CLUSTER FAILOVER FORCE (the replica takes
//     over without catching up: writes it had not received are lost);
//   - cluster-kill-master: the master is killed (SIGKILL), its replica
//     promoted after the node timeout, and the dead node rejoins, empty, as
//     the new master's replica;
//   - cluster-replica-pause: the replica is stopped (SIGSTOP) for most of
//     a lease, so it lags (with WaitReplicas, writes go unacknowledged);
//   - cluster-lossy-failover: the replica is cut off its master's stream
//     (redistest's CutReplica) for half a lease while the master
//     goes on granting, then takes over with CLUSTER FAILOVER FORCE: every
//     write of the cut is lost, the failover that double-grants.
//
// Without WaitReplicas, a forced failover and a killed master may lose
// acknowledged grants: the holds they struck are excused from the overlap
// oracle (the fence must catch the overlaps). With Config.WaitReplicas
// nothing is excused: every grant was on the replica before Lock returned.
var ClusterScenarios = []string{"cluster-failover", "cluster-failover-force", "cluster-kill-master", "cluster-replica-pause", "cluster-lossy-failover"}

// clusterPrimitives are the primitives the cluster nemeses run (one name a
// hold: multilock spans slots, redlock needs independent masters).
var clusterPrimitives = []string{"rlock", "fairlock", "rwlock", "semaphore"}

func isClusterScenario(sc string) bool { return slices.Contains(ClusterScenarios, sc) }

// lossyScenario: the cluster nemeses that may lose acknowledged writes
// (without WaitReplicas).
func lossyScenario(sc string) bool {
	return sc == "cluster-failover-force" || sc == "cluster-kill-master" || sc == "cluster-lossy-failover"
}

// clusterConfigError checks the cluster fields of cfg.
func clusterConfigError(cfg *Config) error {
	switch {
	case isClusterScenario(cfg.Scenario) && cfg.Cluster == nil:
		return fmt.Errorf("scenario %s needs a Cluster with replicas (Config.Cluster)", cfg.Scenario)
	case cfg.Cluster == nil && cfg.WaitReplicas > 0:
		return fmt.Errorf("WaitReplicas is for a Cluster run")
	case cfg.Cluster == nil:
		return nil
	case !slices.Contains(clusterPrimitives, cfg.Primitive):
		return fmt.Errorf("%s does not run on the Cluster (one of %v)", cfg.Primitive, clusterPrimitives)
	case cfg.Child != nil:
		return fmt.Errorf("a Cluster run has no child processes")
	case cfg.Scenario != "none" && !isClusterScenario(cfg.Scenario):
		return fmt.Errorf("a Cluster run takes a cluster scenario (one of %v) or none", ClusterScenarios)
	}
	return nil
}

// bootCluster connects the worker's process to the Cluster: one rueidis
// Cluster client, straight to the nodes (no proxy: the client follows the
// topology the nodes report), and one Client over it.
func (w *worker) bootCluster() error {
	cfg := &w.r.cfg
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cfg.Cluster.Addrs(), DisableCache: true})
	if err != nil {
		return err
	}
	opts := []redisync.Option{redisync.WithWatchdogTimeout(cfg.Lease), redisync.WithMaxPoll(max(cfg.Lease/4, 10*time.Millisecond))}
	if cfg.WaitReplicas > 0 {
		opts = append(opts, redisync.WithWaitReplicas(cfg.WaitReplicas, clusterWaitTimeout(cfg)))
	}
	clients := []*redisync.Client{redisync.New(rc, opts...)}
	w.mu.Lock()
	w.rcs, w.clients = []rueidis.Client{rc}, clients
	w.k = newContender(cfg, clients, w.r.names)
	w.mu.Unlock()
	return nil
}

// clusterWaitTimeout: a WAIT gives up after a quarter lease, so a renewal
// (every third of a lease) that its replica does not acknowledge is retried
// before the lease runs out.
func clusterWaitTimeout(cfg *Config) time.Duration { return max(cfg.Lease/4, redisync.MinDuration) }

// clusterFault injects one cluster fault on the shard of a random name. It
// reports false when there was none (the Cluster not healthy yet).
func (r *runState) clusterFault(ctx context.Context, rng *rand.Rand, fault map[string]any) bool {
	cl := r.cfg.Cluster
	// Each fault starts from a whole Cluster: every master with a linked
	// replica (a paused replica may have been marked failed meanwhile).
	if err := cl.Healthy(); err != nil {
		return false
	}
	name := r.names[rng.IntN(len(r.names))]
	fault["name"] = name
	at := r.now()
	var err error
	switch r.cfg.Scenario {
	case "cluster-failover":
		_, err = cl.Failover(name, false)
	case "cluster-failover-force":
		_, err = cl.Failover(name, true)
	case "cluster-kill-master":
		killed, _, kerr := cl.KillMaster(name)
		err = kerr
		if killed != nil {
			// The dead node comes back as the new master's replica while
			// the run goes on and is checked (teardown waits for it; the
			// next run starts from a whole Cluster).
			r.rejoins.Add(1)
			go func() {
				defer r.rejoins.Done()
				if err := cl.Rejoin(killed); err != nil {
					r.log(map[string]any{"kind": "rejoin", "error": err.Error()})
				}
			}()
		}
	case "cluster-lossy-failover":
		err = r.lossyFailover(ctx, name)
	case "cluster-replica-pause":
		replica, perr := cl.PauseReplica(name)
		err = perr
		if perr == nil {
			// Below the node timeout (1 s), so the replica lags but is not
			// failed; longer than the WAIT timeout and a renewal period.
			sleep(ctx, min(r.cfg.Lease*3/4, 800*time.Millisecond))
			replica.Resume()
		}
	}
	if err != nil {
		fault["error"] = strings.ReplaceAll(err.Error(), "\n", " ")
		r.count(&r.errors)
	}
	if lossyScenario(r.cfg.Scenario) && r.cfg.WaitReplicas == 0 {
		r.hitSpan(at, r.now())
	}
	return true
}

// lossyFailover cuts the replica of name's master off, lets the master
// grant on for half a lease, and has the replica take over (FORCE),
// never having seen those grants.
func (r *runState) lossyFailover(ctx context.Context, name string) error {
	cl := r.cfg.Cluster
	_, heal, err := cl.CutReplica(name)
	if err != nil {
		if heal != nil {
			_ = heal()
		}
		return err
	}
	sleep(ctx, r.cfg.Lease/2)
	_, ferr := cl.Failover(name, true)
	// The promoted node keeps the cut credentials until healed (it needs
	// them again only as a replica).
	if err := heal(); err != nil {
		return err
	}
	return ferr
}

// hitSpan records a fault that may have taken every name's lock away at
// any moment from at to until (a failover losing writes): every hold alive
// in that span is struck.
func (r *runState) hitSpan(at, until time.Duration) {
	r.mu.Lock()
	r.hits = append(r.hits, hit{at: at, until: until})
	r.mu.Unlock()
}

// isMaster reports whether the node behind admin answers as a master now.
func isMaster(ctx context.Context, admin rueidis.Client) bool {
	role, err := admin.Do(ctx, admin.B().Role().Build()).ToArray()
	if err != nil || len(role) == 0 {
		return false
	}
	s, _ := role[0].ToString()
	return s == "master"
}
