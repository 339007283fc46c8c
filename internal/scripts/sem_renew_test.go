package scripts

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// semRenewer is SemRenew as the engine runs it (with the key prefixes).
var semRenewer = SemRenew.WithHead(keys.SemHoldersPrefix, keys.SemPermitsPrefix)

func semTestKeys(name string) *SemKeys {
	d := func(prefix string) string { k, _ := keys.Derived(prefix, name); return k }
	return &SemKeys{Sem: name, Holders: d(keys.SemHoldersPrefix), Permits: d(keys.SemPermitsPrefix),
		Queue: d(keys.SemQueuePrefix), Heartbeats: d(keys.SemHeartbeatPrefix), Channel: d(keys.SemChannelPrefix)}
}

// semRenewOnce renews the permit of it once and returns whether it is
// still held; it keeps the reported expiry in it, as the engine does.
func semRenewOnce(t *testing.T, rc rueidis.Client, leaseMs string, it *RenewItem) bool {
	t.Helper()
	res := semRenewer.exec(context.Background(), rc, leaseMs, 1, func(int) *RenewItem { return it })
	alive, err := semRenewer.ParseRenew(res, 1, func(int) *RenewItem { return it })
	require.NoError(t, err)
	return alive[0]
}

func semAcquired(t *testing.T, rc rueidis.Client, k *SemKeys, id, leaseMs string) *RenewItem {
	t.Helper()
	got, err := SemAcquire(context.Background(), rc, k, "3", 1, id, SemHorizonMs(leaseMs), "0", "publish")
	require.NoError(t, err)
	require.True(t, got.OK)
	return &RenewItem{Key: k.Holders, Owner: id}
}

func serverMs(t *testing.T, rc rueidis.Client) int64 {
	t.Helper()
	now, err := redistest.Do(t, rc, "TIME").AsIntSlice()
	require.NoError(t, err)
	return now[0]*1000 + now[1]/1000
}

func score(t *testing.T, rc rueidis.Client, k *SemKeys, id string) int64 {
	t.Helper()
	s, err := redistest.Do(t, rc, "ZSCORE", k.Holders, id).AsInt64()
	require.NoError(t, err)
	return s
}

// TestSemRenewKeepsTheKeysPastThePermitAndRaisesThemOnceAPeriod: renewed
// every third of its lease, a permit's holders zset and permits hash always
// outlive its expiry, and their expiry is written again only about once a
// SEM_PERIOD (four leases), not at every renewal.
func TestSemRenewKeepsTheKeysPastThePermitAndRaisesThemOnceAPeriod(t *testing.T) {
	t.Parallel() // a server of its own; 12 leases of waiting
	rc := redistest.Start(t).Client(t)
	const lease = 600 // a renewal late by two thirds of it fails the test: room for a loaded machine
	k := semTestKeys("renew:period")
	it := semAcquired(t, rc, k, "p1", strconv.Itoa(lease))
	raised, renewals := 0, 0
	last := pttl(t, rc, k.Holders)
	for end := time.Now().Add(12 * lease * time.Millisecond); time.Now().Before(end); time.Sleep(lease / 3 * time.Millisecond) {
		require.True(t, semRenewOnce(t, rc, strconv.Itoa(lease), it), "renewal %d", renewals)
		renewals++
		left := score(t, rc, k, "p1") - serverMs(t, rc)
		h, p := pttl(t, rc, k.Holders), pttl(t, rc, k.Permits)
		assert.GreaterOrEqual(t, h, left, "the holders zset outlives the permit")
		assert.GreaterOrEqual(t, p, left, "the permits hash outlives the permit")
		assert.InDelta(t, h, p, 50, "the two keys keep one expiry")
		if h > last {
			raised++
		}
		last = h
	}
	require.GreaterOrEqual(t, renewals, 20)
	assert.LessOrEqual(t, raised, renewals/6, "the keys' expiry is written about once in twelve renewals")
	assert.GreaterOrEqual(t, raised, 1, "and written")
}

// TestSemHorizonIsLibLuas: the Go side's SemHorizon is the scripts'.
func TestSemHorizonIsLibLuas(t *testing.T) {
	assert.Contains(t, libSrc, "\nlocal SEM_HORIZON = "+strconv.Itoa(SemHorizon)+"\n")
}

// TestSemRenewNeverRevivesAnExpiredPermit: a permit past its expiry and
// not yet taken back is not renewed, whatever expiry the client last knew.
func TestSemRenewNeverRevivesAnExpiredPermit(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	k := semTestKeys("renew:expired")
	it := semAcquired(t, rc, k, "p1", "200")
	require.True(t, semRenewOnce(t, rc, "200", it))
	expiry := score(t, rc, k, "p1")
	time.Sleep(300 * time.Millisecond)
	assert.False(t, semRenewOnce(t, rc, "200", it), "an expired permit is not renewed")
	assert.Equal(t, expiry, score(t, rc, k, "p1"), "nor its expiry moved")
}

// TestSemRenewFindsThePermitWithoutAReportedExpiry: a renewal whose reply
// was lost leaves the client an old expiry (or none); the next renewal
// reads the permit's own, renews it, and never adds a released one back.
func TestSemRenewFindsThePermitWithoutAReportedExpiry(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	k := semTestKeys("renew:lost-reply")
	it := semAcquired(t, rc, k, "p1", "5000")
	require.True(t, semRenewOnce(t, rc, "5000", it))
	it.expiryArg = "" // the reply was lost
	require.True(t, semRenewOnce(t, rc, "5000", it))
	it.expiryArg = "1" // an expiry long past, of another length
	require.True(t, semRenewOnce(t, rc, "5000", it))

	n, err := SemRelease(context.Background(), rc, k, "p1", "publish")
	require.NoError(t, err)
	require.EqualValues(t, SemReleased, n)
	assert.False(t, semRenewOnce(t, rc, "5000", it), "a released permit stays released")
	assert.True(t, rueidis.IsRedisNil(redistest.Do(t, rc, "ZSCORE", k.Holders, "p1").Error()), "and is not added back")
}

// TestSemRenewNeverShortensAPermit: a permit whose expiry is already past
// the one a renewal would set (the server clock stepped back) keeps it, and
// the renewal reports it.
func TestSemRenewNeverShortensAPermit(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	k := semTestKeys("renew:ahead")
	it := semAcquired(t, rc, k, "p1", "1000")
	ahead := serverMs(t, rc) + 60000
	redistest.Do(t, rc, "ZADD", k.Holders, strconv.FormatInt(ahead, 10), "p1")
	redistest.Do(t, rc, "PEXPIRE", k.Holders, "120000")
	redistest.Do(t, rc, "PEXPIRE", k.Permits, "120000")
	require.True(t, semRenewOnce(t, rc, "1000", it))
	assert.Equal(t, ahead, score(t, rc, k, "p1"), "the later expiry stays")
	assert.Equal(t, strconv.FormatInt(ahead, 10), it.expiryArg, "and is reported")
	require.True(t, semRenewOnce(t, rc, "1000", it), "renewed again from the reported expiry")
	assert.Equal(t, ahead, score(t, rc, k, "p1"))
}

// TestSemRenewReportsEachPermitOfABatch: in one batch, permits renewed to
// the call's expiry, permits already past it (each its own expiry, in the
// reply after the flags) and a released one are each reported as they
// are, and each expiry is kept in its own item.
func TestSemRenewReportsEachPermitOfABatch(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	k := semTestKeys("renew:batch")
	items := []*RenewItem{
		semAcquired(t, rc, k, "p1", "1000"), semAcquired(t, rc, k, "p2", "1000"),
		semAcquired(t, rc, k, "p3", "1000"),
	}
	gone := &RenewItem{Key: items[0].Key, Owner: "p4"} // never acquired
	ahead := serverMs(t, rc) + 60000
	redistest.Do(t, rc, "ZADD", k.Holders, strconv.FormatInt(ahead, 10), "p2", strconv.FormatInt(ahead+7, 10), "p3")
	redistest.Do(t, rc, "PEXPIRE", k.Holders, "120000")
	redistest.Do(t, rc, "PEXPIRE", k.Permits, "120000")
	batch := []*RenewItem{items[1], items[0], gone, items[2]}
	item := func(i int) *RenewItem { return batch[i] }
	res := semRenewer.exec(context.Background(), rc, "1000", len(batch), item)
	alive, err := semRenewer.ParseRenew(res, len(batch), item)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, false, true}, alive)
	assert.Equal(t, strconv.FormatInt(score(t, rc, k, "p1"), 10), items[0].expiryArg)
	assert.Equal(t, strconv.FormatInt(ahead, 10), items[1].expiryArg)
	assert.Equal(t, strconv.FormatInt(ahead+7, 10), items[2].expiryArg)
	assert.Empty(t, gone.expiryArg)
}

// TestParseExpiriesRefusesAMalformedReply: a reply that does not carry a
// flag for each hold and an expiry for each flag "2" fails the batch.
func TestParseExpiriesRefusesAMalformedReply(t *testing.T) {
	items := make([]RenewItem, 3)
	item := func(i int) *RenewItem { return &items[i] }
	alive, err := parseExpiries(nil, "1700000000000 120 1700000000009", 3, item)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, false}, alive)
	assert.Equal(t, []string{"1700000000000", "1700000000009", ""},
		[]string{items[0].expiryArg, items[1].expiryArg, items[2].expiryArg})
	for _, bad := range []string{
		"", "1700000000000", " 111", "1700000000000 11", "1700000000000 112",
		"1700000000000 113", "1700000000000 111 5", "1700000000000 112 ",
	} {
		_, err := parseExpiries(nil, bad, 3, item)
		assert.Error(t, err, "%q", bad)
	}
}

// TestSemRenewLeavesAForeignPermitsKeyAlone: when the permits key holds
// something else (a list, a hash without this permit), the renewals that
// raise the keys' expiry raise the holders zset's and leave that key's
// expiry as it was.
func TestSemRenewLeavesAForeignPermitsKeyAlone(t *testing.T) {
	for _, foreign := range []struct {
		name  string
		write []string
	}{
		{"a list", []string{"RPUSH", "", "x"}},
		{"a hash without the permit", []string{"HSET", "", "other", "1"}},
	} {
		t.Run(foreign.name, func(t *testing.T) {
			rc := redistest.Start(t).Client(t)
			const lease = 300
			k := semTestKeys("renew:foreign")
			it := semAcquired(t, rc, k, "p1", strconv.Itoa(lease))
			redistest.Do(t, rc, "DEL", k.Permits)
			w := append([]string{}, foreign.write...)
			w[1] = k.Permits
			redistest.Do(t, rc, w...)
			raised := false
			last := pttl(t, rc, k.Holders)
			for end := time.Now().Add(12 * lease * time.Millisecond); time.Now().Before(end) && !raised; time.Sleep(lease / 3 * time.Millisecond) {
				redistest.Do(t, rc, "PEXPIRE", k.Permits, "100")
				require.True(t, semRenewOnce(t, rc, strconv.Itoa(lease), it))
				assert.LessOrEqual(t, pttl(t, rc, k.Permits), int64(100), "the foreign key's expiry is not raised")
				h := pttl(t, rc, k.Holders)
				raised = h > last
				last = h
			}
			assert.True(t, raised, "a renewal raised the keys' expiry meanwhile")
		})
	}
}

// TestSemRenewAfterAnOlderSnapshotNeverRenewsAPermitTakenBack: a server
// that restarts from a snapshot taken before the last renewals (an RDB, or
// a replica promoted behind its master) holds the permit at an expiry older
// than the one the client was told. Once that expiry has passed, the first
// script that reckons with the semaphore (an acquire, a read of its state)
// takes the permit back, and a renewal after that never brings it back: at
// most capacity permits are held. Until something takes it back nobody has
// seen it free, and a renewal, which trusts the expiry it reported last,
// keeps it (docs/guarantees.md: the semaphore after lost writes).
func TestSemRenewAfterAnOlderSnapshotNeverRenewsAPermitTakenBack(t *testing.T) {
	for _, takenBack := range []bool{false, true} {
		t.Run(map[bool]string{false: "nobody-looked", true: "taken-back"}[takenBack], func(t *testing.T) {
			rc := redistest.Start(t).Client(t)
			const lease = 1000
			k := semTestKeys("renew:snapshot")
			it := semAcquired(t, rc, k, "p1", strconv.Itoa(lease))
			old := score(t, rc, k, "p1")
			require.NoError(t, redistest.Do(t, rc, "SAVE").Error())
			time.Sleep(lease * 6 / 10 * time.Millisecond)
			require.True(t, semRenewOnce(t, rc, strconv.Itoa(lease), it))
			require.NoError(t, redistest.Do(t, rc, "DEBUG", "RELOAD", "NOSAVE").Error())
			require.Equal(t, old, score(t, rc, k, "p1"), "the snapshot's expiry is back")
			for serverMs(t, rc) <= old {
				time.Sleep(20 * time.Millisecond)
			}
			if !takenBack {
				assert.True(t, semRenewOnce(t, rc, strconv.Itoa(lease), it), "nobody saw it free: kept")
				return
			}
			// Capacity 3: p2's acquire takes p1's expired permit back first.
			semAcquired(t, rc, k, "p2", strconv.Itoa(lease))
			assert.False(t, semRenewOnce(t, rc, strconv.Itoa(lease), it), "a permit taken back is not renewed")
			n, err := redistest.Do(t, rc, "ZSCORE", k.Holders, "p1").ToString()
			assert.Error(t, err, "nor added back: %q", n)
		})
	}
}
