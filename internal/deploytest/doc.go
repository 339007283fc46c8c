// Package deploytest holds the deployment tests behind the README's
// guarantee matrix (issue 17): Sentinel and Cluster failovers with and
// without WaitReplicas, AOF restarts, clock steps, eviction and out of
// memory, each against real redis-server processes. They are the slowest
// tests of the root module (Clusters with replicas, Sentinels), so they live
// in a package of their own that go test runs beside the root package
// instead of after it.
package deploytest
