package redisync

import (
	"fmt"

	"github.com/redisync/redisync/internal/holderinfo"
)

// holderOptions are the Client's holder-metadata settings (see HolderInfo).
type holderOptions struct {
	off   bool // WithHolderInfo(false)
	label string
}

// WithHolderInfo turns the recording of holder metadata (HolderInfo) on or
// off. Recording costs nothing for a hold shorter than a third of its lease;
// a longer one pays one holder_record.lua call (HSETNX and PEXPIRE per hold,
// pipelined after its renewal, no round trip of its own) at its first
// renewal, a refresh (HEXISTS, PEXPIRE) every four leases after, and its
// release removes the record.
// Turn it off where host names or process names must not be stored in
// Redis, where the user's ACL does not cover the side key (the record is
// then refused; see docs/keys-and-permissions.md), or to shave that cost.
// Default: on.
func WithHolderInfo(on bool) Option {
	return func(o *options) { o.holder.off = !on }
}

// WithLabel adds label to the metadata every hold of the Client records
// (the command's --label): a job name, a request id, anything an operator
// should see beside host and process. At most MaxLabelLength bytes of
// valid UTF-8; New panics on a longer one (CheckLabel tells first). It is
// shown escaped by the command, but stored as given. Default: "".
func WithLabel(label string) Option {
	return func(o *options) { o.holder.label = label }
}

func (h *holderOptions) validate() {
	if err := CheckLabel(h.label); err != nil {
		panic(fmt.Sprintf("redisync: WithLabel: %v", err))
	}
}

// encoded is what the Client's holds record: the payload of this
// process's HolderInfo, or "" when recording is off.
func (h *holderOptions) encoded() string {
	if h.off {
		return ""
	}
	info := processHolderInfo(h.label)
	// The scripts store at most holderinfo.MaxStored bytes with a header of
	// under 20: a host or program name that JSON escaping blows up is cut
	// further rather than lose the record.
	payload := func() string { return holderinfo.Payload((*holderinfo.Info)(&info)) }
	for p := payload(); ; p = payload() {
		if len(p) <= holderinfo.MaxStored-32 || (info.Host == "" && info.Program == "") {
			return p
		}
		info.Host, info.Program = cut(info.Host, len(info.Host)/2), cut(info.Program, len(info.Program)/2)
	}
}
