// Package holderinfo is the stored form of the metadata a hold records
// about its holder (redisync.HolderInfo): the value of a field of the
// holder-info hash beside a lock, "<Version>|<start in Unix ms>|<JSON of
// host, pid, program and label>" (docs/layout.md, "Holder metadata"). The
// acquire scripts write it from Payload; the inspections read it with
// Parse. Other-version readers must show the hold without metadata, so the
// encoding changes only with a new Version.
package holderinfo

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Info is redisync.HolderInfo's fields, in its order, so that a pointer to
// one converts to a pointer to the other.
type Info struct {
	Host    string
	PID     int
	Program string
	Started time.Time // zero when not known
	Label   string
}

// Version starts every stored value; a reader that meets another version
// shows the hold without metadata.
const Version = "1"

// MaxStored bounds a stored value, as the acquire scripts do (keyspace.lua's
// INFO_MAX): a longer one was not written by us.
const MaxStored = 2048

// payload is the JSON part of a stored value, with short keys: it is
// written with every acquire.
type payload struct {
	Host    string `json:"h,omitempty"`
	PID     int    `json:"p,omitempty"`
	Program string `json:"c,omitempty"`
	Label   string `json:"l,omitempty"`
}

// Payload is the part of the stored value the acquire scripts are given;
// they store "<Version>|<server time in ms>|<payload>".
func Payload(i *Info) string {
	b, err := json.Marshal(payload{Host: i.Host, PID: i.PID, Program: i.Program, Label: i.Label})
	if err != nil { // strings and an int cannot fail
		panic(err)
	}
	return string(b)
}

// Encode returns the stored form of i: "1|<Started in Unix ms>|<Payload>",
// what the scripts store with the server's time as Started.
func Encode(i *Info) string {
	ms := int64(0)
	if !i.Started.IsZero() {
		ms = i.Started.UnixMilli()
	}
	return Version + "|" + strconv.FormatInt(ms, 10) + "|" + Payload(i)
}

// Parse reads a stored value; nil when it is none of ours (a reader shows
// such a hold without metadata): empty, longer than a script would store,
// of another version, or malformed.
func Parse(v string) *Info {
	if v == "" || len(v) > MaxStored {
		return nil
	}
	parts := strings.SplitN(v, "|", 3)
	if len(parts) != 3 || parts[0] != Version {
		return nil
	}
	ms, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || ms < 0 {
		return nil
	}
	var p payload
	if json.Unmarshal([]byte(parts[2]), &p) != nil {
		return nil
	}
	i := &Info{Host: p.Host, PID: p.PID, Program: p.Program, Label: p.Label}
	if ms > 0 {
		i.Started = time.UnixMilli(ms)
	}
	return i
}
