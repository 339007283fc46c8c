//go:build !mutant_shared_owner

package hold

// sharedOwnerAsUnique is false: see mutant_shared_owner_on.go.
const sharedOwnerAsUnique = false
