package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// inspect --json stays valid JSON with its keys and values intact whatever
// the password: one that is a piece of the document's syntax (`": "`) or
// one of its keys ("kind") is not replaced over the document.
func TestInspectJSONStaysValidWhateverThePassword(t *testing.T) {
	for _, pw := range []string{`": "`, "kind"} {
		srv := redistest.Start(t)
		redistest.Do(t, srv.Client(t), "CONFIG", "SET", "requirepass", pw)
		r := cliEnv(t, []string{"REDIS_PASSWORD=" + pw}, "", "inspect", "--json", "--redis", srv.Addr(), "report:x")
		require.Equal(t, 0, r.code, r.stderr)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), "password %q: inspect --json is not JSON:\n%s", pw, r.stdout)
		assert.Equal(t, "none", doc["kind"], "password %q:\n%s", pw, r.stdout)
		assert.Equal(t, "report:x", doc["name"], "password %q", pw)
		assert.NotContains(t, r.stdout, "***", "password %q: something was blacked out of a document with no secret in it", pw)
	}
}

// A lock whose name and owner id are URL-shaped ("rsync://backup@db1") is
// shown as stored, in the table and in JSON: no password of the command's
// is in them.
func TestInspectShowsURLShapedNamesAsStored(t *testing.T) {
	e := locktest.Setup(t)
	const name, owner = "rsync://backup@db1", "ssh://deploy@web1"
	m := rlock.New(e.C, name, rlock.WithOwner(owner))
	require.NoError(t, m.Lock(context.Background()))
	defer m.Unlock(context.Background())
	r := cli(t, e, "", "inspect", "--json", name)
	require.Equal(t, 0, r.code, r.stderr)
	var doc struct {
		Name    string `json:"name"`
		Holders []struct {
			Owner string `json:"owner"`
		} `json:"holders"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	assert.Equal(t, name, doc.Name, r.stdout)
	require.Len(t, doc.Holders, 1, r.stdout)
	assert.True(t, strings.HasPrefix(doc.Holders[0].Owner, owner), r.stdout)
	r = cli(t, e, "", "inspect", name)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, name)
	assert.Contains(t, r.stdout, owner)
	assert.NotContains(t, r.stdout, "***")
}

// inspect --json keeps owner ids that are not UTF-8 apart: each is spelt as
// the table spells it, with its bytes in owner_base64.
func TestInspectJSONKeepsOwnerIDsThatAreNotUTF8(t *testing.T) {
	e := locktest.Setup(t)
	e.Do(t, "HSET", "report:bytes", "\xff", "1", "\xfe", "1", "ok", "1")
	e.Do(t, "PEXPIRE", "report:bytes", "60000")
	r := cli(t, e, "", "inspect", "--json", "report:bytes")
	require.Equal(t, 0, r.code, r.stderr)
	var doc struct {
		Holders []struct {
			Owner       string `json:"owner"`
			OwnerBase64 string `json:"owner_base64"`
		} `json:"holders"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	got := map[string]string{}
	for _, h := range doc.Holders {
		raw := h.Owner
		if h.OwnerBase64 != "" {
			b, err := base64.StdEncoding.DecodeString(h.OwnerBase64)
			require.NoError(t, err)
			raw = string(b)
		}
		got[raw] = h.Owner
	}
	assert.Equal(t, map[string]string{"\xff": `\xff`, "\xfe": `\xfe`, "ok": "ok"}, got, r.stdout)
}
