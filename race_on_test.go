//go:build race

package redisync_test

// raceOn: the race detector changes what allocates (sync.Pool drops items
// at random, more values escape), so allocation counts mean nothing then.
const raceOn = true
