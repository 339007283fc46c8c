package keys_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keys"
)

// A shared owner's handles keep their latches in the lock's hash: no owner
// id can be one.
func TestLatchFieldsAreRefusedAsOwnerIDs(t *testing.T) {
	assert.NotEmpty(t, keys.ReservedOwner(hold.LatchPrefix+"x:1", false))
}
