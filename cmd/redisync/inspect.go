package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/holderinfo"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/scripts"
)

// inspection is what `inspect` finds under a name. It only reads: nothing in
// Redis changes (expired holders still listed are shown with lease 0).
type inspection struct {
	Name       string   `json:"name"`
	NameBase64 string   `json:"name_base64,omitempty"` // the name's bytes where it is not UTF-8 (see lossless)
	Kind       string   `json:"kind"`                  // none, lock (rlock, or fairlock without waiters), fairlock, rwlock, semaphore, redlock (this server's key)
	Locked     bool     `json:"locked"`
	LeaseMs    int64    `json:"lease_ms,omitempty"` // remaining lease of the lock key
	Token      uint64   `json:"token,omitempty"`    // fencing token of the current hold (rwlock: of the read phase or write)
	Mode       string   `json:"mode,omitempty"`     // rwlock: read or write
	Capacity   *int64   `json:"capacity,omitempty"` // semaphore
	Used       *int64   `json:"used,omitempty"`
	Available  *int64   `json:"available,omitempty"`
	Holders    []holder `json:"holders"`
	Queue      []waiter `json:"queue,omitempty"` // fairlock and semaphore waiters, rwlock waiting writers
	// Note says why no holder records are shown: the holder-info key holds
	// something the library never writes there (it is left alone).
	Note string `json:"note,omitempty"`
}

// reservedField starts the library's own fields in a lock's hash (the
// fencing token, a handle's latch): they are not holders.
const reservedField = "redisync:"

type holder struct {
	Owner       string `json:"owner"`                  // owner id (semaphore: permit id)
	OwnerBase64 string `json:"owner_base64,omitempty"` // its bytes where it is not UTF-8 (see lossless)
	Side        string `json:"side,omitempty"`
	Count       int64  `json:"count"` // hold count (semaphore: permits)
	LeaseMs     int64  `json:"lease_ms"`
	// Info is who took the hold (redisync.HolderInfo), when it recorded it.
	Info *holderInfo `json:"info,omitempty"`
}

// holderInfo is a hold's metadata as inspect shows it.
type holderInfo struct {
	Host    string `json:"host,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Program string `json:"program,omitempty"`
	Started string `json:"started,omitempty"` // RFC 3339, UTC
	AgeMs   int64  `json:"age_ms,omitempty"`  // how long ago, by the server's clock
	Label   string `json:"label,omitempty"`
}

type waiter struct {
	Owner       string `json:"owner"`
	OwnerBase64 string `json:"owner_base64,omitempty"`
	WaitingMs   *int64 `json:"waiting_ms,omitempty"` // absent where the layout does not record when the wait began (rwlock writers)
	HeartbeatMs int64  `json:"heartbeat_ms"`         // until its place lapses without a heartbeat
}

func inspectCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("inspect", "inspect [flags] NAME", `
Shows what is held under NAME: the kind of lock (rlock, fairlock, rwlock,
semaphore, or a Redlock's key on this server: run it against each node), the holders with their hold counts, remaining leases, who took
each hold where it was recorded (host, pid, program, how long ago, --label
of 'run'; a hold records that with its first renewal, a third of its lease
after the grant: before then it shows none), the fencing token, the queue of a fair lock or semaphore, the readers and writer
of a read-write lock, and a semaphore's capacity and permits. It only reads.
A fair lock without waiters has the rlock layout and is shown as "lock".`, stdout, stderr)
	conn := addConnFlags(fs.FlagSet, false)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if done, code := parseFlags(fs, args); done {
		return code
	}
	name, ok := oneName(fs)
	if !ok {
		return fail(stderr, "inspect", exitUsage, "want exactly one NAME (see --help)")
	}
	rc, _, closeRC, err := conn.connect(false)
	if err != nil {
		return fail(stderr, "inspect", exitError, "%v", err)
	}
	defer closeRC()
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	r, err := inspect(ctx, rc, name)
	if err != nil {
		return fail(stderr, "inspect", exitError, "%v", err)
	}
	// The report's values are redacted one by one (redactSecrets), and the
	// report goes out past the redactor, which would read it as text.
	r = r.redacted()
	if *asJSON {
		// encoding/json writes control characters as \u00XX, and
		// jsonPrintable the other runes a terminal would obey: nothing from
		// Redis reaches the terminal raw through JSON either.
		doc, err := json.MarshalIndent(r.lossless(), "", "  ")
		if err != nil {
			return fail(stderr, "inspect", exitError, "%v", err)
		}
		_, _ = reportWriter(stdout).Write(append(jsonPrintable(doc), '\n'))
		return 0
	}
	printReport(reportWriter(stdout), r)
	return 0
}

// redacted returns r with the command's secrets (redactSecrets) replaced in
// each of its values that is data: names, owner ids, holder records; the
// note, a message, gets the whole rule (redact).
func (r inspection) redacted() inspection {
	r.Name = redactSecrets(r.Name)
	r.Holders = slices.Clone(r.Holders)
	for i := range r.Holders {
		h := &r.Holders[i]
		h.Owner = redactSecrets(h.Owner)
		if in := h.Info; in != nil {
			h.Info = &holderInfo{Host: redactSecrets(in.Host), PID: in.PID, Program: redactSecrets(in.Program),
				Started: in.Started, AgeMs: in.AgeMs, Label: redactSecrets(in.Label)}
		}
	}
	r.Queue = slices.Clone(r.Queue)
	for i := range r.Queue {
		r.Queue[i].Owner = redactSecrets(r.Queue[i].Owner)
	}
	r.Note = redactString(r.Note)
	return r
}

// lossless returns r for encoding/json, which turns every byte of a string
// that is not UTF-8 into U+FFFD: two owner ids "\xff" and "\xfe" would be
// one. A name or owner id that is not UTF-8 is spelt as the table spells
// it (printable: \xff, a backslash doubled), and its bytes go beside it in
// name_base64 or owner_base64 (standard base64), whose presence says the
// text is that spelling; a holder record's strings get the spelling alone.
func (r inspection) lossless() inspection {
	r.Name, r.NameBase64 = textAndBytes(r.Name)
	r.Holders = slices.Clone(r.Holders)
	for i := range r.Holders {
		h := &r.Holders[i]
		h.Owner, h.OwnerBase64 = textAndBytes(h.Owner)
		if in := h.Info; in != nil {
			c := *in
			c.Host, c.Program, c.Label = utf8Text(c.Host), utf8Text(c.Program), utf8Text(c.Label)
			h.Info = &c
		}
	}
	r.Queue = slices.Clone(r.Queue)
	for i := range r.Queue {
		r.Queue[i].Owner, r.Queue[i].OwnerBase64 = textAndBytes(r.Queue[i].Owner)
	}
	return r
}

// textAndBytes returns s and "" when s is UTF-8, else printable(s) and s in
// standard base64.
func textAndBytes(s string) (string, string) {
	if utf8.ValidString(s) {
		return s, ""
	}
	return printable(s), base64.StdEncoding.EncodeToString([]byte(s))
}

// utf8Text is s when it is UTF-8, else printable(s).
func utf8Text(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return printable(s)
}

// inspect reads the keys of name and works out what they hold.
func inspect(ctx context.Context, rc rueidis.Client, name string) (inspection, error) {
	r := inspection{Name: name, Kind: "none", Holders: []holder{}}
	rd := reader{ctx: ctx, rc: rc}
	t := rd.strs("TIME")
	if rd.err != nil {
		return r, rd.err
	}
	sec, _ := strconv.ParseInt(t[0], 10, 64)
	usec, _ := strconv.ParseInt(t[1], 10, 64)
	rd.nowMs = sec*1000 + usec/1000
	derive := func(prefix string) string { k, _ := keys.Derived(prefix, name); return k }

	// none is what a missing key shows: a fair lock's waiters, if any.
	none := func() (inspection, error) {
		if q := rd.queue(derive(keys.FairQueuePrefix), derive(keys.FairHeartbeatPrefix)); len(q) > 0 {
			r.Kind, r.Queue = "fairlock", q
		}
		return r, rd.err
	}
	// A PTTL of -2 says the key went after TYPE (the lease ran out between
	// the reads, which are apart): nothing is held, as if TYPE had said none
	// (not a key "without expiry", someone else's data).
	switch typ := rd.str("TYPE", name); typ {
	case "none":
		return none()
	case "hash":
		h := rd.hash(name)
		pttl := rd.int("PTTL", name)
		if pttl == -2 && rd.err == nil {
			return none()
		}
		r.LeaseMs = max(0, pttl)
		// The scripts' recognition (internal/scripts/keyspace.lua): a lock hash has
		// an expiry and only hold counts besides our own fields; a
		// semaphore's configuration has none and a count for capacity.
		// Anything else is someone's data, never shown as a lock.
		if why := notOurs(h, pttl); why != "" && rd.err == nil {
			return r, fmt.Errorf("%s is no redisync lock: it is %s", printable(name), why)
		}
		switch {
		case h["mode"] != "":
			rd.rwlock(&r, h, derive(keys.RWWritersPrefix), derive(keys.RWTokenPrefix))
		case h["capacity"] != "":
			r.LeaseMs = 0
			rd.semaphore(&r, h, derive)
		default:
			r.Kind, r.Locked = "lock", true
			r.Token, _ = strconv.ParseUint(h["redisync:token"], 10, 64)
			for f, v := range h {
				if strings.HasPrefix(f, reservedField) {
					continue
				}
				n, _ := strconv.ParseInt(v, 10, 64)
				r.Holders = append(r.Holders, holder{Owner: f, Count: n, LeaseMs: r.LeaseMs})
			}
			if q := rd.queue(derive(keys.FairQueuePrefix), derive(keys.FairHeartbeatPrefix)); len(q) > 0 {
				r.Kind, r.Queue = "fairlock", q
			}
		}
	case "string":
		// A Redlock node's key: a string with an expiry whose value is the
		// holder's owner id and round (internal/scripts/redlock_acquire.lua);
		// one without expiry is no lock of any kind.
		pttl := rd.int("PTTL", name)
		if pttl == -2 && rd.err == nil {
			return none()
		}
		if pttl < 0 && rd.err == nil {
			return r, fmt.Errorf("%s is a Redis string without expiry, not a redisync lock", printable(name))
		}
		r.Kind, r.Locked, r.LeaseMs = "redlock", true, max(0, pttl)
		r.Holders = append(r.Holders, holder{Owner: rd.str("GET", name), Count: 1, LeaseMs: r.LeaseMs})
	default:
		if rd.err == nil {
			return r, fmt.Errorf("%s is a Redis %s, not a redisync lock", printable(name), printable(typ))
		}
	}
	if len(r.Holders) > 0 {
		rd.holderInfo(&r, derive(keys.HolderInfoPrefix))
	}
	return r, rd.err
}

// holderInfo attaches to each holder what it recorded about itself in the
// holder-info hash (field: the hold's field in the lock hash, or the
// permit id). Records of owners that hold nothing are not shown.
func (rd *reader) holderInfo(r *inspection, key string) {
	// Read apart from rd: a user whose ACL does not cover the side key
	// still sees the holders (the library's Holders does the same). One
	// no-writes script, which Redis runs under out of memory too (it
	// refuses every command queued in a MULTI then).
	typ, pttl, records, err := scripts.LockRead(rd.ctx, rd.rc, key)
	if err != nil {
		r.Note = fmt.Sprintf("holder records not shown: reading %s: %v", key, err)
		return
	}
	switch {
	case typ == "none":
		return
	case typ != "hash" || pttl == -1:
		if typ == "hash" {
			typ = "hash without expiry"
		}
		r.Note = fmt.Sprintf("%s holds a %s the library never writes there: no holder records shown (the key is left alone)", key, typ)
		return
	}
	for i := range r.Holders {
		h := &r.Holders[i]
		field := h.Owner
		if h.Side == "write" {
			field += ":write"
		}
		info := holderinfo.Parse(records[field])
		if info == nil {
			continue
		}
		h.Info = &holderInfo{Host: info.Host, PID: info.PID, Program: info.Program, Label: info.Label}
		if !info.Started.IsZero() {
			h.Info.Started = info.Started.UTC().Format(time.RFC3339)
			h.Info.AgeMs = max(0, rd.nowMs-info.Started.UnixMilli())
		}
	}
}

// describe says who a holder is in one line for an operator: owner id and,
// when recorded, host, pid, program, age and label (all escaped).
func (h *holder) describe() string {
	s := printable(h.Owner)
	if h.Info == nil {
		return s
	}
	var parts []string
	if h.Info.Host != "" {
		parts = append(parts, "host "+printable(h.Info.Host))
	}
	if h.Info.PID != 0 {
		parts = append(parts, "pid "+strconv.Itoa(h.Info.PID))
	}
	if h.Info.Program != "" {
		parts = append(parts, "program "+printable(h.Info.Program))
	}
	if h.Info.Started != "" {
		parts = append(parts, "started "+age(h.Info.AgeMs)+" ago")
	}
	if h.Info.Label != "" {
		parts = append(parts, "label "+printable(h.Info.Label))
	}
	return s + " (" + strings.Join(parts, ", ") + ")"
}

// age is a duration in ms, rounded for people.
func age(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	case d >= time.Minute:
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// notOurs says why the hash h (with PTTL pttl) is none of our layouts, or
// "" when it is one: a semaphore's configuration (no expiry, a capacity),
// or a lock hash as the library recognises one (engine.LockShape).
func notOurs(h map[string]string, pttl int64) string {
	if c, ok := h["capacity"]; ok && pttl < 0 {
		if (c == "0" || engine.IsCount(c)) && len(c) <= 16 {
			return ""
		}
		// LockShape would call it a semaphore's configuration: to a lock it
		// is one, but inspect shows semaphores, and this is none.
		return "a hash without expiry whose capacity is no permit count"
	}
	return engine.LockShape(h, pttl)
}

func (rd *reader) rwlock(r *inspection, h map[string]string, writersKey, phaseKey string) {
	r.Kind, r.Locked, r.Mode = "rwlock", true, h["mode"]
	// The phase key "<token> w|r ..." (internal/scripts/rwlock_lib.lua); the hash
	// field of the layout before it.
	if rd.str("TYPE", phaseKey) == "string" {
		digits, _, _ := strings.Cut(rd.str("GET", phaseKey), " ")
		r.Token, _ = strconv.ParseUint(digits, 10, 64)
	}
	if r.Token == 0 {
		r.Token, _ = strconv.ParseUint(strings.TrimPrefix(h["redisync:token"], "t"), 10, 64)
	}
	for f, v := range h {
		n, err := strconv.ParseInt(v, 10, 64)
		if f == "mode" || strings.HasPrefix(f, reservedField) || err != nil {
			continue
		}
		if owner, ok := strings.CutSuffix(f, ":write"); ok {
			r.Holders = append(r.Holders, holder{Owner: owner, Side: "write", Count: n, LeaseMs: r.LeaseMs})
			continue
		}
		// A read hold's lease is its own timeout key's; the owner's share
		// lasts as long as its longest one.
		var longest int64
		for i := int64(1); i <= n && i <= 1000; i++ {
			longest = max(longest, rd.int("PTTL", keys.Tagged(r.Name)+":"+f+":rwlock_timeout:"+strconv.FormatInt(i, 10)))
		}
		r.Holders = append(r.Holders, holder{Owner: f, Side: "read", Count: n, LeaseMs: longest})
	}
	// A writer's claim holds its heartbeat deadline only: how long it has
	// waited is not recorded, so it is shown as unknown.
	for _, z := range rd.zscores(writersKey) {
		r.Queue = append(r.Queue, waiter{Owner: strings.TrimSuffix(z.Member, ":write"), HeartbeatMs: max(0, int64(z.Score)-rd.nowMs)})
	}
}

func (rd *reader) semaphore(r *inspection, h map[string]string, derive func(string) string) {
	r.Kind = "semaphore"
	capacity, _ := strconv.ParseInt(h["capacity"], 10, 64)
	r.Token, _ = strconv.ParseUint(h["token"], 10, 64)
	permits := rd.hash(derive(keys.SemPermitsPrefix))
	var used int64
	for _, z := range rd.zscores(derive(keys.SemHoldersPrefix)) {
		n, _ := strconv.ParseInt(permits[z.Member], 10, 64)
		lease := max(0, int64(z.Score)-rd.nowMs)
		if lease > 0 {
			used += n
		}
		r.Holders = append(r.Holders, holder{Owner: z.Member, Count: n, LeaseMs: lease})
	}
	available := max(0, capacity-used)
	r.Capacity, r.Used, r.Available, r.Locked = &capacity, &used, &available, used > 0
	r.Queue = rd.queue(derive(keys.SemQueuePrefix), derive(keys.SemHeartbeatPrefix))
}

// reader runs read-only commands, keeping the first error.
type reader struct {
	ctx   context.Context
	rc    rueidis.Client
	nowMs int64
	err   error
}

func (rd *reader) do(args ...string) rueidis.RedisResult {
	res := rd.rc.Do(rd.ctx, rd.rc.B().Arbitrary(args...).Build())
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) && rd.err == nil {
		rd.err = err
	}
	return res
}

func (rd *reader) str(args ...string) string    { s, _ := rd.do(args...).ToString(); return s }
func (rd *reader) strs(args ...string) []string { s, _ := rd.do(args...).AsStrSlice(); return s }
func (rd *reader) int(args ...string) int64     { n, _ := rd.do(args...).AsInt64(); return n }
func (rd *reader) hash(key string) map[string]string {
	m, _ := rd.do("HGETALL", key).AsStrMap()
	return m
}
func (rd *reader) zscores(key string) []rueidis.ZScore {
	z, _ := rd.do("ZRANGE", key, "0", "-1", "WITHSCORES").AsZScores()
	return z
}

// queue lists a wait queue in order, with each waiter's heartbeat deadline.
func (rd *reader) queue(queueKey, heartbeatKey string) []waiter {
	beats := map[string]int64{}
	for _, z := range rd.zscores(heartbeatKey) {
		beats[z.Member] = int64(z.Score)
	}
	var out []waiter
	for _, z := range rd.zscores(queueKey) {
		out = append(out, waiter{
			Owner:       z.Member,
			WaitingMs:   ptr(max(0, rd.nowMs-int64(z.Score)/1000)),
			HeartbeatMs: max(0, beats[z.Member]-rd.nowMs),
		})
	}
	return out
}

// printReport prints r as a table. Every string that came from Redis (or
// from the command line) goes through printable.
func printReport(w io.Writer, r inspection) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintf(tw, "name\t%s\nkind\t%s\n", printable(r.Name), r.Kind)
	if r.Kind == "none" {
		fmt.Fprintln(tw, "state\tnot locked, nobody waiting")
		return
	}
	state := "free"
	if r.Locked {
		state = "held"
		if r.Mode != "" {
			state += " (" + printable(r.Mode) + ")"
		}
		if r.LeaseMs > 0 {
			state += ", lease " + ms(r.LeaseMs) + " left"
		}
	}
	fmt.Fprintf(tw, "state\t%s\n", state)
	if r.Token != 0 {
		fmt.Fprintf(tw, "token\t%d\n", r.Token)
	}
	if r.Capacity != nil {
		fmt.Fprintf(tw, "permits\t%d of %d held, %d available\n", *r.Used, *r.Capacity, *r.Available)
	}
	if len(r.Holders) > 0 {
		fmt.Fprintln(tw, "\nholder\tside\tcount\tlease left\thost\tpid\tprogram\tstarted\tlabel")
		for _, h := range r.Holders {
			host, pid, prog, started, label := "-", "-", "-", "-", "-"
			if in := h.Info; in != nil {
				host, prog, label = or(printable(in.Host), "-"), or(printable(in.Program), "-"), or(printable(in.Label), "-")
				if in.PID != 0 {
					pid = strconv.Itoa(in.PID)
				}
				if in.Started != "" {
					started = age(in.AgeMs) + " ago"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(h.Owner), or(h.Side, "-"), h.Count, ms(h.LeaseMs),
				host, pid, prog, started, label)
		}
	}
	if r.Note != "" {
		fmt.Fprintf(tw, "\nnote\t%s\n", printable(r.Note))
	}
	if len(r.Queue) > 0 {
		fmt.Fprintln(tw, "\n#\twaiter\twaiting\theartbeat lapses in")
		for i, q := range r.Queue {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", i+1, printable(q.Owner), msOrUnknown(q.WaitingMs), ms(q.HeartbeatMs))
		}
	}
}

func ms(n int64) string { return (time.Duration(n) * time.Millisecond).String() }

// msOrUnknown is ms for a value that may not be known ("-").
func msOrUnknown(n *int64) string {
	if n == nil {
		return "-"
	}
	return ms(*n)
}

func ptr[T any](v T) *T { return &v }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
