package graph

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
)

// checkSameObjects finds two templates that render the same object: the
// same group and kind, and the same name and namespace, written alike
// (literally, or through the same expressions: ${schema.spec.name} in both,
// whitespace aside). kro v0.9.4 accepts such graphs and applies both, so
// that when both are included the one applied last overwrites what the
// other wrote; fleetgraph does the same (its prune keeps an object either
// resource applied), warns, and refuses them only under
// Options.RefuseSameObjects.
//
// Different kinds, namespaces or names (a literal prefix is enough),
// collections whose forEach differs, externalRefs (reading one object
// twice is harmless) and resources whose includeWhen may keep them apart
// raise nothing. For the last, the rule is: two resources collide when the
// includeWhen entries of one are all entries of the other (none at all
// included), because then whenever the one with more entries is created,
// so is the other. Otherwise each has a condition the other lacks, which
// can make them mutually exclusive (mode == "a" and mode == "b"): proving
// that they are, or are not, needs more than the text.
func (c *identityChecker) checkSameObjects() {
	byKind := make(map[schema.GroupKind][]*resource, len(c.resources))
	for _, r := range c.resources {
		if r.node.External || r.node.GVK.Kind == "" {
			continue
		}
		k := r.node.GVK.GroupKind()
		byKind[k] = append(byKind[k], r)
	}
	for _, rs := range byKind {
		if len(rs) < 2 {
			continue
		}
		seen := map[objectKey][]*resource{}
		for _, r := range rs {
			key, ok := c.objectKey(r)
			if !ok {
				continue
			}
			for _, other := range seen[key] {
				if sameConditions(other, r) {
					c.sameObject(r, other, key)
					break
				}
			}
			seen[key] = append(seen[key], r)
		}
	}
}

// objectKey is what identifies a template's object, as written: its
// name, its namespace ("" for the instance's namespace, or none for a
// cluster-scoped kind), for a collection its forEach, and in a hub graph
// the cluster it is written in ("" for the hub's own).
type objectKey struct {
	name, namespace, forEach, target string
}

func (c *identityChecker) objectKey(r *resource) (objectKey, bool) {
	name, _ := r.metadataField("name")
	n, ok := name.(string)
	if !ok || n == "" {
		return objectKey{}, false
	}
	key := objectKey{name: normalizeTemplate(n)}
	if c.kindIsNamespaced(r) {
		ns, _ := r.metadataField("namespace")
		s, _ := ns.(string)
		if s = normalizeTemplate(s); s != "${schema.metadata.namespace}" {
			key.namespace = s
		}
	}
	var dims []string
	for _, it := range r.iterators {
		dims = append(dims, it.name+"="+normalizeTemplate(it.written))
	}
	key.forEach = strings.Join(dims, ";")
	key.target = c.writtenTarget(r)
	return key, true
}

// writtenTarget is r's target as written, normalized: two resources with
// the same name in different clusters are different objects.
func (c *identityChecker) writtenTarget(r *resource) string {
	t, _ := targetOf(c.rgd, r.src)
	if t == nil || t.Cluster == nil {
		return ""
	}
	if ct := t.Cluster; ct.Name == "" {
		return "secret:" + normalizeTemplate(ct.KubeconfigSecretNamespace) + "/" + normalizeTemplate(ct.KubeconfigSecretName)
	}
	return "name:" + normalizeTemplate(t.Cluster.Name)
}

// kindIsNamespaced reports whether r's kind lives in a namespace; true when
// the scope is unknown, so that the namespace is compared.
func (c *identityChecker) kindIsNamespaced(r *resource) bool {
	if c.scopes == nil {
		return true
	}
	namespaced, err := c.scopes.IsNamespaced(r.node.GVK)
	return err != nil || namespaced
}

// sameConditions reports whether a and b are always created together:
// the includeWhen entries of one are all entries of the other.
func sameConditions(a, b *resource) bool {
	ca, cb := normalizedConditions(a), normalizedConditions(b)
	return subset(ca, cb) || subset(cb, ca)
}

func normalizedConditions(r *resource) []string {
	out := make([]string, len(r.src.IncludeWhen))
	for i, w := range r.src.IncludeWhen {
		out[i] = normalizeTemplate(w)
	}
	return out
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func (c *identityChecker) sameObject(r, other *resource, key objectKey) {
	name, _ := r.metadataField("name")
	n, _ := name.(string)
	where := "in the instance's namespace"
	switch {
	case !c.kindIsNamespaced(r):
		where = "cluster-scoped"
	case key.namespace != "":
		where = fmt.Sprintf("in namespace %q", key.namespace)
	}
	if key.target != "" {
		where += ", in the same target cluster"
	}
	why := ""
	if len(r.src.IncludeWhen)+len(other.src.IncludeWhen) > 0 {
		why = "; their includeWhen do not keep them apart"
	}
	expression := ""
	if expr.HasExpr(n) {
		expression = n
	}
	if c.refuseSameObjects {
		c.diag.fail(&Error{ResourceID: r.node.ID, Path: "metadata.name", Expression: expression, Err: errorf(ErrInvalid,
			"resource %q already renders the same object (%s %q %s): each would overwrite the other%s (Options.RefuseSameObjects)",
			other.node.ID, r.node.GVK.Kind, n, where, why)})
		return
	}
	c.diag.warn(Warning{ResourceID: r.node.ID, Path: "metadata.name", Expression: expression, Message: fmt.Sprintf(
		"resource %q renders the same object (%s %q %s)%s: when both are included, the one applied last overwrites what the other wrote, as in kro",
		other.node.ID, r.node.GVK.Kind, n, where, why)})
}

// normalizeTemplate rewrites a string so that two templates written alike
// compare equal: inside each ${}, whitespace outside string literals is
// dropped, except a single space between two words (a in b).
func normalizeTemplate(s string) string {
	if !expr.HasExpr(s) || !strings.ContainsAny(s, " \t\n\r") {
		return s // nothing to drop: already normal
	}
	segs, err := expr.Scan(s)
	if err != nil {
		return s
	}
	var b strings.Builder
	for _, seg := range segs {
		if !seg.Expr {
			b.WriteString(seg.Text)
			continue
		}
		b.WriteString("${")
		squeezeCEL(&b, seg.Text)
		b.WriteString("}")
	}
	return b.String()
}

// squeezeCEL writes src without insignificant whitespace. It knows CEL's
// string literals: quotes, triple quotes, escapes and raw strings.
func squeezeCEL(b *strings.Builder, src string) {
	pendingSpace := false
	for i := 0; i < len(src); {
		ch := src[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
			pendingSpace = true
			i++
			continue
		case ch == '"' || ch == '\'':
			raw := i > 0 && (src[i-1] == 'r' || src[i-1] == 'R')
			end := stringLiteralEnd(src, i, raw)
			b.WriteString(src[i:end])
			i = end
			pendingSpace = false
			continue
		}
		if pendingSpace && b.Len() > 0 && isIdentByte(lastByte(b)) && isIdentByte(ch) {
			b.WriteByte(' ')
		}
		pendingSpace = false
		b.WriteByte(ch)
		i++
	}
}

// stringLiteralEnd returns the index just past the string literal that
// starts at src[i].
func stringLiteralEnd(src string, i int, raw bool) int {
	quote := src[i : i+1]
	if strings.HasPrefix(src[i:], strings.Repeat(quote, 3)) {
		quote = strings.Repeat(quote, 3)
	}
	for j := i + len(quote); j < len(src); j++ {
		if src[j] == '\\' && !raw {
			j++
			continue
		}
		if strings.HasPrefix(src[j:], quote) {
			return j + len(quote)
		}
	}
	return len(src)
}

func lastByte(b *strings.Builder) byte { s := b.String(); return s[len(s)-1] }
