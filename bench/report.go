package main

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Meta says where and when the numbers were taken.
type Meta struct {
	Date    string  `json:"date"`
	Cores   int     `json:"cores"`
	CPU     string  `json:"cpu"`
	Redis   string  `json:"redis"`
	Go      string  `json:"go"`
	Quick   bool    `json:"quick"`
	Seconds float64 `json:"seconds"`
}

// Result is one measured figure.
type Result struct {
	Scenario  string             `json:"scenario"`
	Contender string             `json:"contender"`
	Value     float64            `json:"value"`
	Unit      string             `json:"unit"`
	Ratio     float64            `json:"ratio,omitempty"`
	RatioTo   string             `json:"ratio_to,omitempty"`
	VsLimit   float64            `json:"vs_bare_pair,omitempty"` // scenario 1: mean / bare script pair
	P50       float64            `json:"p50_us,omitempty"`
	P99       float64            `json:"p99_us,omitempty"`
	Allocs    float64            `json:"allocs_per_op,omitempty"`
	Count     int                `json:"count,omitempty"`
	Extra     map[string]float64 `json:"extra,omitempty"`
}

// Report is the whole run.
type Report struct {
	Meta    Meta     `json:"meta"`
	Results []Result `json:"results"`
}

func (r Result) short() string {
	s := fmt.Sprintf("%s %s", num(r.Value), r.Unit)
	if r.Ratio != 0 {
		s += fmt.Sprintf("  (%.2f× %s)", r.Ratio, r.RatioTo)
	}
	return s
}

func (r Report) json() []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return append(b, '\n')
}

func (r Report) markdown() string {
	var b strings.Builder
	m := r.Meta
	fmt.Fprintf(&b, "Measured %s on %d cores (%s), Redis %s, %s%s; every ratio is against a figure from the same run.\n\n",
		m.Date, m.Cores, m.CPU, m.Redis, m.Go, map[bool]string{true: ", -quick", false: ""}[m.Quick])
	b.WriteString("| scenario | contender | value | ratio | p50 µs | p99 µs | allocs/op | notes |\n|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Results {
		ratio := ""
		if x.Ratio != 0 {
			ratio = fmt.Sprintf("%.2f× %s", x.Ratio, x.RatioTo)
		}
		var notes []string
		if x.VsLimit != 0 {
			notes = append(notes, fmt.Sprintf("%.2f× bare pair", x.VsLimit))
		}
		keys := make([]string, 0, len(x.Extra))
		for k := range x.Extra {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			notes = append(notes, fmt.Sprintf("%s %s", strings.ReplaceAll(k, "_", " "), num(x.Extra[k])))
		}
		if x.Count != 0 {
			notes = append(notes, fmt.Sprintf("n=%d", x.Count))
		}
		fmt.Fprintf(&b, "| %s | %s | %s %s | %s | %s | %s | %s | %s |\n", x.Scenario, x.Contender, num(x.Value), x.Unit, ratio,
			opt(x.P50), opt(x.P99), opt(x.Allocs), strings.Join(notes, "; "))
	}
	return b.String()
}

func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

func opt(v float64) string {
	if v == 0 {
		return ""
	}
	return num(v)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func splitLines(s string) []string { return strings.Split(strings.ReplaceAll(s, "\r", ""), "\n") }

func cut(s, prefix string) (string, bool) { return strings.CutPrefix(strings.TrimSpace(s), prefix) }

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// svg draws two panels: throughput at the largest goroutine count as a
// ratio to the limit, and in-process hand-off p50 with 10 waiters (log
// scale, µs).
func (r Report) svg() string {
	var tp, ho []Result
	largest := ""
	for _, x := range r.Results {
		if strings.HasPrefix(x.Scenario, "2 ") {
			largest = x.Scenario // sizes run in increasing order
		}
	}
	for _, x := range r.Results {
		if x.Scenario == largest {
			tp = append(tp, x)
		}
		if x.Scenario == "4 hand-off, 10 waiters" && x.Value > 0 {
			ho = append(ho, x)
		}
	}
	const w, rowH, left, barW = 900, 22, 230, 560
	h := 90 + rowH*(len(tp)+len(ho)) + 60
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="14" font-weight="bold">redisync vs peers, %s, %d cores, Redis %s</text>`+"\n", r.Meta.Date, r.Meta.Cores, r.Meta.Redis)
	y := 40
	fmt.Fprintf(&b, `<text x="10" y="%d" font-weight="bold">Throughput, %s: ratio to the limit (bare Redisson scripts)</text>`+"\n", y, strings.TrimPrefix(largest, "2 "))
	y += 10
	for _, x := range tp {
		bw := int(math.Min(x.Ratio, 1.2) / 1.2 * barW)
		fill := "#9aa5b1"
		if strings.HasPrefix(x.Contender, "redisync") {
			fill = "#2b6cb0"
		}
		fmt.Fprintf(&b, `<text x="10" y="%d">%s</text><rect x="%d" y="%d" width="%d" height="14" fill="%s"/><text x="%d" y="%d">%.2f×</text>`+"\n",
			y+12, esc(x.Contender), left, y+1, max(bw, 1), fill, left+max(bw, 1)+6, y+12, x.Ratio)
		y += rowH
	}
	y += 20
	fmt.Fprintf(&b, `<text x="10" y="%d" font-weight="bold">Hand-off p50 with 10 waiters, µs (log scale; shorter is better)</text>`+"\n", y)
	y += 10
	for _, x := range ho {
		bw := int(math.Log10(math.Max(x.Value, 1)) / 6 * barW) // 1 µs .. 1 s
		fill := "#9aa5b1"
		if strings.HasPrefix(x.Contender, "redisync") {
			fill = "#2b6cb0"
		}
		fmt.Fprintf(&b, `<text x="10" y="%d">%s</text><rect x="%d" y="%d" width="%d" height="14" fill="%s"/><text x="%d" y="%d">%s µs</text>`+"\n",
			y+12, esc(x.Contender), left, y+1, max(bw, 1), fill, left+max(bw, 1)+6, y+12, num(x.Value))
		y += rowH
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
