package scripts

import (
	"context"
	_ "embed"
	"strconv"

	"github.com/redis/rueidis"
)

var (
	//go:embed holder_record.lua
	holderRecordSrc string

	holderRecord = newRenewScript(holderRecordSrc, false)
)

// Record is one hold whose holder record HolderRecord writes.
type Record struct {
	Info  string // the holder-info hash
	Field string // the hold's field there
	// Lock is the key the hold's renewal extends, and Token the hold's
	// token in decimal ("" or "0": none known): the record is written (or
	// refreshed) only while the lock still carries the hold.
	Lock, Token string
	AgeMs       int64 // ms since the grant
	// Refresh: the record was written before; only its expiry moves.
	Refresh bool
}

// HolderRecord builds one holder_record.lua call for n records of one hash
// slot (or a single server): payload is what the records say, ttlMs how
// long they live at least. EVALSHA (EVAL while the digest is not known,
// see HolderRecordDoMulti); HolderRecordEval is the same as EVAL, for
// NOSCRIPT.
func HolderRecord(c rueidis.Client, payload, ttlMs string, n int, rec func(int) Record) rueidis.Completed {
	b := recordArgs(payload, ttlMs, n, rec)
	defer b.free()
	return holderRecord.src.command(c, b.keys, b.args)
}

// HolderRecordEval is HolderRecord as an EVAL (which loads the script).
func HolderRecordEval(c rueidis.Client, payload, ttlMs string, n int, rec func(int) Record) rueidis.Completed {
	b := recordArgs(payload, ttlMs, n, rec)
	defer b.free()
	return holderRecord.src.eval(c, b.keys, b.args)
}

// HolderRecordDoMulti sends commands built by HolderRecord in one DoMulti,
// with the SCRIPT LOAD that learns the digest while it is not known,
// routed to slotKey's node.
func HolderRecordDoMulti(ctx context.Context, c rueidis.Client, slotKey string, cmds ...rueidis.Completed) []rueidis.RedisResult {
	return holderRecord.src.doMulti(ctx, c, slotKey, cmds...)
}

func recordArgs(payload, ttlMs string, n int, rec func(int) Record) *argBuf {
	b := argBufs.Get().(*argBuf)
	b.args = append(b.args, payload, ttlMs)
	for i := range n {
		r := rec(i)
		b.keys = append(b.keys, r.Info, r.Lock)
		age := "-1"
		if !r.Refresh {
			age = strconv.FormatInt(max(r.AgeMs, 0), 10)
		}
		token := r.Token
		if token == "" {
			token = "0"
		}
		b.args = append(b.args, r.Field, age, token)
	}
	return b
}
