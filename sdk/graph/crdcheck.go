package graph

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
)

// checkCRDSize refuses a generated CRD larger than Limits.MaxCRDBytes as
// JSON: every spoke would refuse it at fan-out (etcd keeps at most 1.5 MiB
// per object). It runs before the CRD is validated, which costs more the
// larger the CRD, and returns the JSON for checkCRD.
func (k *instanceKind) checkCRDSize(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, bool) {
	raw, err := json.Marshal(crd)
	if err != nil {
		k.diag.fail(&Error{Path: "spec.schema", Err: errorf(ErrSchema, "generated CRD: %v", err)})
		return nil, false
	}
	limit := k.limits.MaxCRDBytes
	if len(raw) <= limit {
		return raw, true
	}
	k.diag.fail(&Error{Path: "spec.schema", Err: limitErrorf(ErrSchema, nil,
		"the generated CRD is %d bytes of JSON, over the limit of %d (Limits.MaxCRDBytes); %s",
		len(raw), limit, crdParts(crd))})
	return nil, false
}

// crdParts says what takes the room in a CRD, largest first.
func crdParts(crd *apiextensionsv1.CustomResourceDefinition) string {
	v := crd.Spec.Versions[0]
	root := v.Schema.OpenAPIV3Schema
	parts := []struct {
		name string
		v    any
	}{
		{"spec schema", root.Properties["spec"]},
		{"status schema", root.Properties["status"]},
		{"printer columns", v.AdditionalPrinterColumns},
		{"labels and annotations", []any{crd.Labels, crd.Annotations}},
	}
	type part struct {
		name string
		n    int
	}
	sizes := make([]part, 0, len(parts))
	for _, p := range parts {
		raw, _ := json.Marshal(p.v)
		sizes = append(sizes, part{p.name, len(raw)})
	}
	slices.SortStableFunc(sizes, func(a, b part) int { return b.n - a.n })
	out := make([]string, len(sizes))
	for i, p := range sizes {
		out[i] = fmt.Sprintf("%s %d", p.name, p.n)
	}
	return "bytes by part: " + strings.Join(out, ", ")
}

// checkCRD runs the API server's own validation of a CustomResourceDefinition
// on the generated one, so that what the API server would refuse when the
// CRD is applied (a validation rule that does not compile, a default that
// breaks its own schema...) is a compile error that points at the RGD. kro
// finds these only when it applies the CRD.
//
// raw is the CRD as JSON: the verdict on a CRD is kept by its hash
// (crdVerdicts), since the same graph is compiled again for each spoke's
// schemas and after each restart.
func (k *instanceKind) checkCRD(crd *apiextensionsv1.CustomResourceDefinition, raw []byte) {
	key := sha256.Sum256(raw)
	errs, ok := crdVerdicts.get(key)
	if !ok {
		errs = validateCRD(crd)
		crdVerdicts.put(key, errs)
	}
	for _, e := range errs {
		k.diag.fail(&Error{Path: e.path, Err: errorf(ErrSchema, "%s", e.msg)})
	}
}

// crdError is one thing the API server's validation says of a CRD.
type crdError struct{ path, msg string }

func validateCRD(crd *apiextensionsv1.CustomResourceDefinition) []crdError {
	internal := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		return []crdError{{path: "spec.schema", msg: fmt.Sprintf("generated CRD: %v", err)}}
	}
	// The status the API server keeps is not ours to check.
	internal.Status.StoredVersions = []string{crd.Spec.Versions[0].Name}
	var out []crdError
	for _, e := range crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal) {
		msg := e.Type.String()
		switch v := e.BadValue.(type) {
		case string:
			if v != "" {
				msg += fmt.Sprintf(" %q", v)
			}
		case apiextensions.ValidationRule:
			msg += fmt.Sprintf(" %q", v.Rule)
		}
		if detail, _, _ := strings.Cut(e.Detail, "\n"); detail != "" {
			msg += ": " + strings.TrimSpace(detail)
		}
		out = append(out, crdError{path: crdFieldPath(e.Field), msg: msg})
	}
	return out
}

// crdVerdicts keeps the API server's verdict on recent CRDs by the hash of
// their JSON, process-wide, emptied when full.
var crdVerdicts = &verdicts{m: map[[sha256.Size]byte][]crdError{}}

const crdVerdictsSize = 512

type verdicts struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte][]crdError
}

func (v *verdicts) get(key [sha256.Size]byte) ([]crdError, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	errs, ok := v.m[key]
	return errs, ok
}

func (v *verdicts) put(key [sha256.Size]byte, errs []crdError) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.m) >= crdVerdictsSize {
		clear(v.m)
	}
	v.m[key] = errs
}

var crdProperty = regexp.MustCompile(`\.properties\[([^\]]+)\]`)

// crdFieldPath turns a path inside the generated CRD
// ("spec.validation.openAPIV3Schema.properties[spec].properties[port].default")
// into the RGD's ("spec.schema.spec.port.default").
func crdFieldPath(p string) string {
	const root = "spec.validation.openAPIV3Schema"
	rest, ok := strings.CutPrefix(p, root)
	if !ok {
		if _, after, found := strings.Cut(p, "schema.openAPIV3Schema"); found {
			rest, ok = after, true
		}
	}
	if !ok {
		return rgdFieldPath(p)
	}
	rest = crdProperty.ReplaceAllString(rest, ".$1")
	r := strings.NewReplacer(".items", "[]", ".additionalProperties", "[*]")
	return "spec.schema" + r.Replace(rest)
}

var printerColumn = regexp.MustCompile(`additionalPrinterColumns(\[\d+\].*)$`)

// rgdFieldPath maps the generated CRD's other fields that come from the
// RGD (printer columns, labels and annotations) to spec.schema's.
func rgdFieldPath(p string) string {
	if m := printerColumn.FindStringSubmatch(p); m != nil {
		return "spec.schema.additionalPrinterColumns" + m[1]
	}
	if rest, ok := strings.CutPrefix(p, "metadata."); ok && (strings.HasPrefix(rest, "labels") || strings.HasPrefix(rest, "annotations")) {
		return "spec.schema.metadata." + rest
	}
	return "spec.schema"
}
