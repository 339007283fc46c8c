//go:build !mutant_renew_unguarded

package scripts

// guardKeyType keeps the renewal scripts as written: see renew_mutant_on.go.
func guardKeyType(src string) string { return src }
