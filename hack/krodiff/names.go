package krodiff

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// namesPrefix starts the comment lines of a corpus file that say what
// fleetgraph's rejection of it must name: one text per line, such as
// `resource "config"`, a field path, an expression as written or a marker.
// absentPrefix starts a line naming what is wrong because it is missing
// (a required field): it cannot be quoted from the RGD.
const (
	namesPrefix  = "# names: "
	absentPrefix = "# names (absent): "
)

// wanted is one text a rejection must name.
type wanted struct {
	text   string
	absent bool
}

// wantedNames returns the texts the corpus file raw says a rejection must
// name.
func wantedNames(raw []byte) []wanted {
	var out []wanted
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), namesPrefix); ok {
			out = append(out, wanted{text: name})
		}
		if name, ok := strings.CutPrefix(sc.Text(), absentPrefix); ok {
			out = append(out, wanted{text: name, absent: true})
		}
	}
	return out
}

// yamlBody is raw without its comment lines.
func yamlBody(raw []byte) string {
	var b strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// NamingProblems checks that fleetgraph's rejection v of the corpus file
// raw points at what is wrong, and returns what it misses:
//   - the file says, in "# names: " lines, what the message must name, and
//     the message names each;
//   - at least one of those is text from the RGD itself (the offending
//     expression, marker or value), not only a path, or what is missing
//     from it ("# names (absent): ");
//   - at compile, every error is a *graph.Error that locates itself: a
//     resource id, or a path below spec.schema.
//
// An accepted RGD has no problems.
func NamingProblems(raw []byte, v Verdict) []string {
	if v.Accepted || v.Err == nil {
		return nil
	}
	names := wantedNames(raw)
	if len(names) == 0 {
		return []string{fmt.Sprintf("no %q line says what the rejection must name (a resource id or schema path, and the offending expression or marker)", strings.TrimSpace(namesPrefix))}
	}
	var problems []string
	msg, body := v.Err.Error(), yamlBody(raw)
	quoted := false
	for _, n := range names {
		if !strings.Contains(msg, n.text) {
			problems = append(problems, fmt.Sprintf("the rejection does not name %q", n.text))
		}
		quoted = quoted || n.absent || strings.Contains(body, n.text)
	}
	if !quoted {
		problems = append(problems, "none of the names is text from the RGD: name the offending expression, marker or value")
	}
	if v.Stage == StageCompile {
		for _, e := range leaves(v.Err) {
			if p := locates(e); p != "" {
				problems = append(problems, p)
			}
		}
	}
	return problems
}

// locates says why e does not point at a place in the RGD, or "".
func locates(e error) string {
	var ge *graph.Error
	if !errors.As(e, &ge) {
		return fmt.Sprintf("%q is not a *graph.Error", e.Error())
	}
	switch ge.Path {
	case "", "spec.schema", "spec.schema.spec", "spec.schema.status":
		if ge.ResourceID == "" {
			return fmt.Sprintf("%q names neither a resource nor a field", e.Error())
		}
	}
	return ""
}

// leaves splits joined errors.
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}
