package keys

import "strconv"

// RatePrefix starts the key of one identity of one rate limiter.
const RatePrefix = "redisync_rate"

// Rate returns the key of identity key of the rate limiter named limiter:
//
//	RatePrefix + ":{" + H + "}:" + len(limiter) + ":" + limiter + ":" + key
//
// where H, the slot string, is key's effective hash tag when it has one,
// key itself when it has none and contains no '}', and "" otherwise. The
// limiter's name is length-prefixed (in decimal) so that the map
// (limiter, key) -> Rate is injective: H never contains '}', so the first
// '}' after the prefix's "{" closes it; the length then says where the
// limiter's name ends, and the key is the rest. The key hashes to key's
// slot (every limiter's state for one identity shares it, and identities
// spread over a Cluster), or, for H == "" (an empty tag "{}"), as a whole
// string: either way each decision names one key, so every pair of
// strings works on a Cluster. The key starts with OwnPrefix, so no lock
// name (Reserved) and no other prefix of ours can meet it.
func Rate(limiter, key string) string {
	slot, _ := slotString(key)
	return RatePrefix + ":{" + slot + "}:" + strconv.Itoa(len(limiter)) + ":" + limiter + ":" + key
}
