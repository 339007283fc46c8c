// Package doccheck holds tests that keep the prose honest: every test a
// document names as evidence (README.md's guarantee matrix, docs/*.md)
// exists in the tree, so a renamed or deleted test cannot leave a cell
// pointing at nothing; every number a document states for the code (a
// token's keep time, a queue's delay bound, a default) is read from the
// code's constants and scripts and must match, and the code a stated rule
// follows from is still there; every public constant that spells out its
// number (so that go doc shows it) equals the internal one the code uses;
// and a lock is called reentrant only as something asked for.
package doccheck
