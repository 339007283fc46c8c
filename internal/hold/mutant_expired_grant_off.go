//go:build !mutant_expired_grant

package hold

// expiredGrantReported is false: see mutant_expired_grant_on.go.
const expiredGrantReported = false
