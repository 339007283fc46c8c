//go:build !mutant_redisson_tag

package keys

// effectiveTagRule is false: Redisson's names follow Redisson's rule.
const effectiveTagRule = false
