//go:build mutant_rwlock_token_in_hash

package scripts

// rwTokenInHash re-introduces issue 16's item 1 for the tests' teeth: the
// rwlock scripts write the token into the lock hash again
// ("redisync:token"), where Redisson's scripts count it as a hold.
const rwTokenInHash = true
