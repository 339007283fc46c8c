//go:build mutant_renew_unguarded

package scripts

import "regexp"

var typeGuard = regexp.MustCompile(`redis\.call\('type', key\)\.ok == '\w+'`)

// guardKeyType re-introduces issue 12's defect 6 in the renewal scripts:
// the TYPE check on each hold's key becomes `true`, so one key of another
// type aborts the whole batch script with WRONGTYPE. Only for proving that
// the isolation tests can fail.
func guardKeyType(src string) string { return typeGuard.ReplaceAllString(src, "true") }
