//go:build mutant_stall_blind

package redlock

// mutantStallBlind re-introduces a fixed defect, so that the tests that
// guard against it can be shown to fail: a node wait that charges a stall
// of this process to the nodes, so a client stall fails every node at once.
// go test -tags mutant_stall_blind ./redlock/ -run Stall
const mutantStallBlind = true
