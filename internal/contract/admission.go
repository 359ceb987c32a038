package contract

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// AdmissionPolicyName is the name of the MutatingAdmissionPolicy and its
// binding that AdmissionPolicy returns for g.
func AdmissionPolicyName(g *graph.Graph) string {
	return "fleetgraph." + g.Instance.Plural + "." + g.Instance.GVK.Group
}

// AdmissionPolicy returns a MutatingAdmissionPolicy and its binding that
// make the API server add Finalizer and AnnotationChildKinds to every new
// instance of g, in the request that creates it. Without them the Runtime
// writes both itself before the first child, one more write per instance;
// with them a new instance costs only its children and its status.
//
// The policy ignores its own failures (an instance it could not stamp is
// stamped by the Runtime). It needs the admissionregistration.k8s.io/v1
// MutatingAdmissionPolicy API (Kubernetes 1.36, or earlier with the feature
// enabled). Bound too early, right after the CRD's group/version appears,
// it makes the API server refuse creates (see AdmissionProbe), so
// hub.FanOut binds it only once a probe shows that it refuses none.
func AdmissionPolicy(g *graph.Graph) []client.Object {
	return StampPolicy(g, AdmissionPolicyName(g), map[string]string{AnnotationChildKinds: EncodeChildKinds(GraphKinds(g))})
}

// StampPolicy returns a MutatingAdmissionPolicy named name, and its
// binding, that add Finalizer and annotations to every new instance of g
// in the request that creates it, ignoring their own failures.
// AdmissionPolicy is the spoke runtime's; hub graphs have their own
// (internal/hubgraph).
func StampPolicy(g *graph.Graph, name string, annotations map[string]string) []client.Object {
	entries := make([]string, 0, len(annotations))
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		entries = append(entries, fmt.Sprintf("%q: %q", k, annotations[k]))
	}
	stamp := fmt.Sprintf(`Object{metadata: Object.metadata{finalizers: [%q], annotations: {%s}}}`,
		Finalizer, strings.Join(entries, ", "))
	return policyAndBinding(g, name, stamp, admissionv1.Ignore, nil)
}

// LabelAdmissionProbe marks the dry-run objects that AdmissionProbe's
// binding matches, and nothing else.
const LabelAdmissionProbe = "fleetgraph.dev/admission-probe"

// AdmissionProbeName is the name of the policy and binding AdmissionProbe
// returns for g; an error naming it answers a probe.
func AdmissionProbeName(g *graph.Graph) string {
	return "fleetgraph-probe." + g.Instance.Plural + "." + g.Instance.GVK.Group
}

// AdmissionProbe returns a MutatingAdmissionPolicy and a binding that match
// only objects labelled LabelAdmissionProbe and always fail, naming
// themselves. They tell when AdmissionPolicy can be bound without refusing
// creates.
//
// Why: for a group/version the API server has just started serving, the
// admission chain answers every create matched by a MutatingAdmissionPolicy
// with 503 ("Resource kind ... not found") until it has read the kind's
// schema, a few seconds later; the policy's Ignore failure policy does not
// cover that error. A dry-run create of AdmissionProbeObject fails with
// that 503 while the API server is not ready, and with the probe's own
// error (so the schema was found) once it is.
func AdmissionProbe(g *graph.Graph) []client.Object {
	return ProbePolicy(g, AdmissionProbeName(g))
}

// ProbePolicy is AdmissionProbe under another name, for a policy of
// StampPolicy's under another name.
func ProbePolicy(g *graph.Graph, name string) []client.Object {
	// Fails at evaluation, after the schema lookup that 503s.
	fail := `Object{metadata: Object.metadata{labels: {"probe": string(int(object.metadata.name))}}}`
	probes := &admissionv1.MatchResources{
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelAdmissionProbe: "true"}},
	}
	return policyAndBinding(g, name, fail, admissionv1.Fail, probes)
}

// policyAndBinding returns a MutatingAdmissionPolicy named name that applies
// the apply configuration expression to every new instance of g, and its
// binding, which narrows it to match when set.
func policyAndBinding(g *graph.Graph, name, expression string, failure admissionv1.FailurePolicyType,
	match *admissionv1.MatchResources) []client.Object {
	labels := map[string]string{LabelManagedBy: ManagedBy, LabelGraph: LabelValue(g.Name)}
	policy := &admissionv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			MatchConstraints: instanceCreates(g),
			Mutations: []admissionv1.Mutation{{
				PatchType:          admissionv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionv1.ApplyConfiguration{Expression: expression},
			}},
			FailurePolicy:      ptr.To(failure),
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
		},
	}
	binding := &admissionv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name, MatchResources: match},
	}
	return []client.Object{policy, binding}
}

// AdmissionProbeObject is the instance of g to create, with dry run, to
// ask whether AdmissionProbe (and so AdmissionPolicy) works.
func AdmissionProbeObject(g *graph.Graph) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	u.SetGroupVersionKind(g.Instance.GVK)
	u.SetName("fleetgraph-admission-probe")
	if g.Instance.Namespaced {
		u.SetNamespace("default")
	}
	u.SetLabels(map[string]string{LabelAdmissionProbe: "true"})
	return u
}

// instanceCreates matches the creates of g's instances.
func instanceCreates(g *graph.Graph) *admissionv1.MatchResources {
	return &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: []admissionv1.OperationType{admissionv1.Create},
			Rule: admissionv1.Rule{
				APIGroups:   []string{g.Instance.GVK.Group},
				APIVersions: []string{"*"},
				Resources:   []string{g.Instance.Plural},
			},
		},
	}}}
}
