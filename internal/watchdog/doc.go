// Package watchdog is redisync's lease-renewal engine: one per Client, shared
// by every hold of every lock kind. How it works — the schedule, batching,
// per-lease outcomes and the pace of retries — is the doc of the public
// package github.com/redisync/redisync/watchdog, which exports nothing else.
package watchdog
