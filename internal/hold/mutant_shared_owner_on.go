//go:build mutant_shared_owner

package hold

// sharedOwnerAsUnique re-introduces issue 12's defect 5: a handle with a shared owner id
// releases by the count it expects, as if the owner were its alone, and
// takes another handle's count for its own. Only for proving that
// TestSharedOwnerHandlesEachReleaseTheirOwnHold (rlock) can fail.
const sharedOwnerAsUnique = true
