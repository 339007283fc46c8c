//go:build mutant_release_latch

package hold

// latchDisabled takes the latch away from handles with a shared owner id
// while keeping their release-any semantics: a release sent again after a
// lost reply then takes a second hold — another handle's. Only for proving
// that TestLostReleaseReplyIsRetriedWithoutDecrementingTwice (rlock) can
// fail.
const latchDisabled = true
