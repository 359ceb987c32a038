package crdcompat

import (
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// compareBounds reports bounds that now refuse values the old schema
// accepted, as kro's compatibility check does: a bound added where there was
// none, a lower bound raised or an upper bound lowered. Removing or relaxing
// a bound is safe.
func (d *schemaDiff) compareBounds(path string, old, new *apiextensionsv1.JSONSchemaProps) {
	d.bound(path, "minimum", floatBound(old.Minimum), floatBound(new.Minimum), true)
	d.bound(path, "maximum", floatBound(old.Maximum), floatBound(new.Maximum), false)
	d.bound(path, "minLength", intBound(old.MinLength), intBound(new.MinLength), true)
	d.bound(path, "maxLength", intBound(old.MaxLength), intBound(new.MaxLength), false)
	d.bound(path, "minItems", intBound(old.MinItems), intBound(new.MinItems), true)
	d.bound(path, "maxItems", intBound(old.MaxItems), intBound(new.MaxItems), false)
}

// bound is one limit: its value and how it reads.
type bound struct {
	v    float64
	text string
}

func floatBound(f *float64) *bound {
	if f == nil {
		return nil
	}
	return &bound{*f, strconv.FormatFloat(*f, 'f', -1, 64)}
}

func intBound(n *int64) *bound {
	if n == nil {
		return nil
	}
	return &bound{float64(*n), strconv.FormatInt(*n, 10)}
}

func (d *schemaDiff) bound(path, name string, old, new *bound, lower bool) {
	switch {
	case new == nil:
	case old == nil:
		d.add(path, "%s %s added", name, new.text)
	case lower && new.v > old.v:
		d.add(path, "%s raised from %s to %s", name, old.text, new.text)
	case !lower && new.v < old.v:
		d.add(path, "%s lowered from %s to %s", name, old.text, new.text)
	}
}
