// Package doccheck holds tests that keep the prose honest: every test a
// document names as evidence (README.md's guarantee matrix, docs/*.md)
// exists in the tree, so a renamed or deleted test cannot leave a cell
// pointing at nothing.
package doccheck
