// Command teeth proves that the regression tests have teeth: each mutant
// under mutants/ brings one fixed defect back into a copy of the code, and
// the test it names must then fail. The mutants live here, not behind build
// tags, so production code keeps only the correct path.
//
// Usage (from the repository):
//
//	go run ./internal/teeth [-list] [-baseline] [-share k/n | -rotate -share n] [names...]
//
// make teeth runs every mutant; .ci/run runs one share of them, picked by
// -rotate from the commit. Names (file names without .mutant) pick
// mutants; -share k/n keeps those whose index in name order is k mod n, and
// with -rotate k is HEAD's first eight hex digits mod n, so successive
// commits run the shares in no fixed order but each as often. -baseline
// first runs each test without its mutant, which must pass. The mutants run
// one at a time.
//
// # The mutant file
//
//	# <name>: what the mutant breaks, in one or more comment lines
//	package ./internal/engine
//	test ^TestTheRegressionTestThatMustFail$
//	flags -race            (optional: extra go test flags)
//	--- internal/engine/renew.go
//	<<<
//	exact old text (must occur exactly once in the file)
//	===
//	replacement text
//	>>>
//
// More <<< === >>> blocks, and more --- sections (paths relative to the
// module root), may follow; blocks apply in order, each to the text the
// ones before it left. Inside a block every line is text, "#" lines too.
//
// For each mutant the runner applies the replacements to copies of the
// files, writes a go build -overlay file that puts the copies in place of
// the originals (.go files and //go:embed'ed .lua files alike), and runs
// go test -overlay FILE -count=1 -run TEST FLAGS PACKAGE. The verdicts:
//
//   - caught: the test failed;
//   - NOT CAUGHT: it passed;
//   - stale: an old text does not occur exactly once (the code moved: write
//     the mutant again against the new text);
//   - build-broken: the mutated package does not build;
//   - no-test: TEST matches no test;
//   - fails-clean (-baseline): the test fails without the mutant.
//
// The exit status is non-zero unless every mutant run is caught. The
// package's own test checks that every mutant still applies, so a stale
// mutant shows in make test too.
package main
