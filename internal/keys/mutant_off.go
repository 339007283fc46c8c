//go:build !mutant_keys_tagonly

package keys

// tagOnly is false: our derived keys encode the whole name.
const tagOnly = false
