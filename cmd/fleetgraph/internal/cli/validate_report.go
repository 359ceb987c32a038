package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// validationReport is what validate found, as -o json and yaml write it.
type validationReport struct {
	Files   int `json:"files"`
	Skipped int `json:"skippedDocuments"`
	// NotYAML are the files of directories that are not YAML, skipped.
	NotYAML []string           `json:"notYAML,omitempty"`
	Results []validationResult `json:"results"`
}

// validationResult is one ResourceGraphDefinition.
type validationResult struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Name      string `json:"name,omitempty"`
	Valid     bool   `json:"valid"`
	Resources int    `json:"resources,omitempty"`
	// Errors make it invalid.
	Errors []diagnostic `json:"errors,omitempty"`
	// Warnings name what could not be checked.
	Warnings []diagnostic `json:"warnings,omitempty"`
	// Extensions are the fleetgraph extensions it uses (Message names
	// the feature); --strict turns them into errors.
	Extensions []diagnostic `json:"extensions,omitempty"`
}

// diagnostic is one problem, at a line of the file.
type diagnostic struct {
	Line       int    `json:"line"`
	Resource   string `json:"resource,omitempty"`
	Path       string `json:"path,omitempty"`
	Expression string `json:"expression,omitempty"`
	Message    string `json:"message"`
}

// maxExpression is how much of an expression a line shows.
const maxExpression = 80

// String is the diagnostic as the compiler words it: resource id, field
// path, expression (cut to one short line) and message.
func (d diagnostic) String() string {
	var parts []string
	if d.Resource != "" {
		parts = append(parts, fmt.Sprintf("resource %q", d.Resource))
	}
	if d.Path != "" {
		parts = append(parts, d.Path)
	}
	if d.Expression != "" {
		parts = append(parts, shorten(d.Expression, maxExpression))
	}
	return oneLine.Replace(strings.Join(append(parts, d.Message), ": "))
}

// oneLine keeps a diagnostic on its line: newlines in what it quotes are
// escaped (the other controls are escaped where every line is written).
var oneLine = strings.NewReplacer("\n", `\n`, "\r", `\r`)

// shorten puts s on one line of at most n runes.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func (r *validationReport) invalid() int {
	n := 0
	for _, res := range r.Results {
		if !res.Valid {
			n++
		}
	}
	return n
}

func (r *validationReport) write(s Streams, format string) error {
	switch format {
	case "json":
		return writeJSON(s.Out, r)
	case "yaml":
		return writeYAML(s.Out, r)
	}
	for _, msg := range r.NotYAML {
		fmt.Fprintf(s.Out, "warning: skipped %s\n", msg)
	}
	for _, res := range r.Results {
		for _, d := range res.Errors {
			fmt.Fprintf(s.Out, "%s:%d: %s\n", res.File, d.Line, d)
		}
		for _, d := range res.Warnings {
			fmt.Fprintf(s.Out, "%s:%d: warning: %s\n", res.File, d.Line, d)
		}
		for _, d := range res.Extensions {
			d.Message = "fleetgraph extension (--strict refuses it): " + d.Message
			fmt.Fprintf(s.Out, "%s:%d: note: %s\n", res.File, d.Line, d)
		}
	}
	if len(r.Results) > 0 { // else the command's error says what it found
		fmt.Fprintln(s.ErrOut, r.summary())
	}
	return nil
}

func (r *validationReport) summary() string {
	msg := fmt.Sprintf("%s in %s", plural(len(r.Results), "ResourceGraphDefinition"), plural(r.Files, "file"))
	if r.Skipped > 0 {
		msg += fmt.Sprintf(" (%s of other kinds skipped)", plural(r.Skipped, "document"))
	}
	if n := r.invalid(); n > 0 {
		return msg + fmt.Sprintf(": %d invalid", n)
	}
	return msg + ": all valid"
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(raw, '\n'))
	return err
}

func writeYAML(w interface{ Write([]byte) (int, error) }, v any) error {
	raw, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(raw)
	return err
}
