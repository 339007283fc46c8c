// Package callbudget holds the call-budget test: on a redis-server of its
// own, it counts (INFO commandstats, deterministic) the scripts and the
// Redis calls inside them that each primitive's acquire, release and one
// renewal make on the common path — a free name, a single owner — and fails
// when one goes above its budget. The budget table, with the reason for
// each call, is the "Call budget" section of docs/benchmarks.md: the test
// reads it from there, so the doc and the test cannot drift apart.
package callbudget
