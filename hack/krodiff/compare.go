package krodiff

import (
	"fmt"
	"strings"
)

// Outcome classifies one corpus file.
type Outcome string

// Outcomes.
const (
	// Agree: same verdict and, when accepted, the same CRD and dependencies.
	Agree Outcome = "agree"
	// Explained: a disagreement listed in KnownDifferences.
	Explained Outcome = "explained"
	// Unexplained: a disagreement not listed. Fails the test.
	Unexplained Outcome = "unexplained"
	// Stale: listed in KnownDifferences but both agree. Fails the test.
	Stale Outcome = "stale"
)

// Result is the comparison of one corpus file.
type Result struct {
	File       string
	Kro        Verdict
	Fleetgraph Verdict
	// Diff is empty when both agree, else a readable account of how they
	// differ.
	Diff    string
	Outcome Outcome
	// Reason is the KnownDifferences entry's, for Explained and Stale.
	Reason string
}

// Classify compares kro's and fleetgraph's verdicts on file.
func Classify(file string, kro, fg Verdict) Result {
	r := Result{File: file, Kro: kro, Fleetgraph: fg, Diff: Difference(kro, fg)}
	known, listed := knownDifference(file)
	r.Reason = known.Reason
	switch {
	case r.Diff == "" && listed:
		r.Outcome = Stale
	case r.Diff == "":
		r.Outcome = Agree
	case listed:
		r.Outcome = Explained
	default:
		r.Outcome = Unexplained
	}
	return r
}

// Difference is empty when kro and fleetgraph agree: both reject, or both
// accept with equal CRDs and dependencies. Otherwise it says how they
// differ, with kro's side first.
func Difference(kro, fg Verdict) string {
	if kro.Accepted != fg.Accepted {
		return fmt.Sprintf("verdicts differ:\n  kro:        %s\n  fleetgraph: %s", kro, fg)
	}
	if !kro.Accepted {
		return ""
	}
	var b strings.Builder
	if d := jsonDiff(kro.CRD, fg.CRD); d != "" {
		fmt.Fprintf(&b, "generated CRDs differ:\n%s\n", d)
	}
	if d := jsonDiff(asAny(kro.Dependencies), asAny(fg.Dependencies)); d != "" {
		fmt.Fprintf(&b, "dependencies differ:\n%s\n", d)
	}
	return b.String()
}

// Counts summarises results.
type Counts struct {
	Corpus, Agree, Explained, Unexplained, Stale int
}

// Count tallies results by outcome.
func Count(results []Result) Counts {
	c := Counts{Corpus: len(results)}
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
	return fmt.Sprintf("corpus %d, agree %d, disagree %d (explained %d, unexplained %d), stale table entries %d",
		c.Corpus, c.Agree+c.Stale, c.Explained+c.Unexplained, c.Explained, c.Unexplained, c.Stale)
}

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
