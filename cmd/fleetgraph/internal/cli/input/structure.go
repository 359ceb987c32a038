package input

import (
	"bytes"
	"errors"
	"fmt"
)

// MaxDocumentTokens is the most structural tokens (line breaks and the
// characters , [ { - :) one YAML document may hold before it is parsed.
// Parsing costs memory per node, and a document can hold a node every
// few bytes ("- a" lines, "[[],[],...]"): 16 MiB of them took 4.4 GiB
// and two minutes to read as an RGD, and the costliest shape within this
// bound (a mapping of 32,000 keys without values) about 160 MiB. The
// largest RGD or CRD document of kro's examples holds about 10,000 tokens
// (250 KB of YAML).
const MaxDocumentTokens = 64_000

// ErrTooComplex: a document holds more than MaxDocumentTokens.
var ErrTooComplex = errors.New("more YAML structure than a document may hold")

// CheckStructure refuses a document with more than MaxDocumentTokens
// structural tokens, without parsing it; what names it in the error
// ("file.yaml:12").
func CheckStructure(what string, doc []byte) error {
	n := 0
	for _, c := range []byte("\n,[{-:") {
		n += bytes.Count(doc, []byte{c})
		if n > MaxDocumentTokens {
			return fmt.Errorf("%s: %w (over %d tokens, such as line breaks and , [ { - :)", what, ErrTooComplex, MaxDocumentTokens)
		}
	}
	return nil
}
