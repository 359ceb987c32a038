package krodiff

import (
	"fmt"
	"strings"
)

// Outcome classifies one corpus file or behaviour case.
type Outcome string

// Outcomes.
const (
	// Agree: no difference.
	Agree Outcome = "agree"
	// Explained: every difference is covered by the file's entry in the
	// table of known differences.
	Explained Outcome = "explained"
	// Unexplained: some difference is not covered. Fails the test.
	Unexplained Outcome = "unexplained"
	// Stale: listed in the table but no difference is left. Fails the test.
	Stale Outcome = "stale"
)

// Result is the comparison of one corpus file or behaviour case.
type Result struct {
	File       string
	Kro        Verdict
	Fleetgraph Verdict
	// Diff has one line per difference; empty when both agree.
	Diff    []string
	Outcome Outcome
	// Unexplained are the lines of Diff the table does not cover.
	Unexplained []string
	// Reason is the table entry's, for Explained and Stale.
	Reason string
}

// Classify sorts diff, the differences found on file, against table.
func Classify(file string, diff []string, table []KnownDifference) Result {
	r := Result{File: file, Diff: diff}
	known, listed := lookup(table, file)
	r.Reason = known.Reason()
	r.Unexplained = known.uncovered(diff)
	switch {
	case len(diff) == 0 && listed:
		r.Outcome = Stale
	case len(diff) == 0:
		r.Outcome = Agree
	case len(r.Unexplained) == 0:
		r.Outcome = Explained
	default:
		r.Outcome = Unexplained
	}
	return r
}

// Difference lists how kro's and fleetgraph's verdicts differ, one line
// each: "verdict: ..." when one accepts and the other rejects, else
// "crd: <path>: kro X, fleetgraph Y" and "dependencies: ..." for accepted
// RGDs. It is empty when both reject, or both accept with equal CRDs and
// dependencies.
func Difference(kro, fg Verdict) []string {
	if kro.Accepted != fg.Accepted {
		return []string{fmt.Sprintf("verdict: kro %s; fleetgraph %s", kro, fg)}
	}
	if !kro.Accepted {
		return nil
	}
	return append(prefixed("crd: ", jsonDiff(kro.CRD, fg.CRD)),
		prefixed("dependencies: ", jsonDiff(asAny(kro.Dependencies), asAny(fg.Dependencies)))...)
}

func prefixed(prefix string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = prefix + l
	}
	return out
}

// indented renders diff lines for a test failure.
func indented(lines []string) string { return "  " + strings.Join(lines, "\n  ") }

// asAny turns dependencies into the JSON shape jsonDiff walks.
func asAny(deps map[string][]string) map[string]any {
	out := make(map[string]any, len(deps))
	for id, d := range deps {
		list := make([]any, len(d))
		for i, s := range d {
			list[i] = s
		}
		out[id] = list
	}
	return out
}

// Counts summarises results.
type Counts struct {
	Total, Agree, Explained, Unexplained, Stale int
}

// Count tallies results by outcome.
func Count(results []Result) Counts {
	c := Counts{Total: len(results)}
	for _, r := range results {
		switch r.Outcome {
		case Agree:
			c.Agree++
		case Explained:
			c.Explained++
		case Unexplained:
			c.Unexplained++
		case Stale:
			c.Stale++
		}
	}
	return c
}

func (c Counts) String() string {
	return fmt.Sprintf("%d, agree %d, disagree %d (explained %d, unexplained %d), stale table entries %d",
		c.Total, c.Agree+c.Stale, c.Explained+c.Unexplained, c.Explained, c.Unexplained, c.Stale)
}
