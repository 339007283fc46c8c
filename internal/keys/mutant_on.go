//go:build mutant_keys_tagonly

package keys

// tagOnly re-introduces issue 13's defect 4 for the tests' teeth: our
// derived keys follow Redisson's rule again, so "x" and "{x}" share them.
const tagOnly = true
