package scripts

import (
	"crypto/sha1"
	"encoding/hex"
)

// sha1Hex is the script's EVALSHA digest, for commands built by hand (batches
// sent with DoMulti), which rueidis's Lua type does not cover.
func sha1Hex(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}
