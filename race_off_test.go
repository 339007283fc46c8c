//go:build !race

package redisync_test

// raceOn: see race_on_test.go.
const raceOn = false
