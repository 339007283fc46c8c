//go:build mutant_redisson_tag

package keys

// effectiveTagRule re-introduces issue 16's item 2 for the tests' teeth:
// Redisson's names are derived by the effective hash tag again instead of
// Redisson's "contains '{'", so for "a{b" and "{}x" the two libraries use
// different channels and read-hold keys.
const effectiveTagRule = true
