package callbudget

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Section is the heading of the budget table in docs/benchmarks.md.
const Section = "## Call budget"

// Budget is one row of the table: at most Scripts script calls and Calls
// Redis calls (inside the scripts or outside them) for one operation of
// one primitive.
type Budget struct {
	Primitive string // "rlock", "fairlock", "rwlock read", ...
	Op        string // "acquire", "release" or "renewal"
	Scripts   int64
	Calls     int64
	Why       string // the calls, and the reason for each
}

// Parse reads the first table after Section in a markdown document: the
// columns are primitive, operation, scripts, calls and the reasons.
func Parse(r io.Reader) ([]Budget, error) {
	sc := bufio.NewScanner(r)
	in, header := false, 0
	var out []Budget
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == Section:
			in = true
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "## "):
			in = false
			continue
		case !strings.HasPrefix(line, "|"):
			if header > 0 { // the table ended
				in = false
			}
			continue
		}
		header++
		if header <= 2 { // column names and the |---| line
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 5 {
			return nil, fmt.Errorf("callbudget: %d cells, want 5: %s", len(cells), line)
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		b := Budget{Primitive: cells[0], Op: cells[1], Why: cells[4]}
		var err error
		if b.Scripts, err = strconv.ParseInt(cells[2], 10, 64); err != nil {
			return nil, fmt.Errorf("callbudget: scripts of %s %s: %w", b.Primitive, b.Op, err)
		}
		if b.Calls, err = strconv.ParseInt(cells[3], 10, 64); err != nil {
			return nil, fmt.Errorf("callbudget: calls of %s %s: %w", b.Primitive, b.Op, err)
		}
		out = append(out, b)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("callbudget: no table under %q", Section)
	}
	return out, nil
}
