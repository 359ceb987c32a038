package spoke

import (
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// stamped by the Runtime), so it never blocks a create. It needs the
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy API (Kubernetes
// 1.36, or earlier with the feature enabled); hub.FanOut installs it next
// to the CRD where the API is served.
func AdmissionPolicy(g *graph.Graph) []client.Object {
	name := AdmissionPolicyName(g)
	labels := map[string]string{LabelManagedBy: ManagedBy, LabelGraph: g.Name}
	stamp := fmt.Sprintf(`Object{metadata: Object.metadata{finalizers: [%q], annotations: {%q: %q}}}`,
		Finalizer, AnnotationChildKinds, EncodeChildKinds(GraphKinds(g)))
	policy := &admissionv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule: admissionv1.Rule{
						APIGroups:   []string{g.Instance.GVK.Group},
						APIVersions: []string{"*"},
						Resources:   []string{g.Instance.Plural},
					},
				},
			}}},
			Mutations: []admissionv1.Mutation{{
				PatchType:          admissionv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionv1.ApplyConfiguration{Expression: stamp},
			}},
			FailurePolicy:      ptr.To(admissionv1.Ignore),
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
		},
	}
	binding := &admissionv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
	}
	return []client.Object{policy, binding}
}
