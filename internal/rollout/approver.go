package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// This file records who approved from the API server's own account of the
// request (request.userInfo), never from managed fields, whose manager
// name the writer picks. A MutatingAdmissionPolicy on GraphRollouts
// (ApproverPolicy) writes AnnotationApprovedBy in the request that sets
// AnnotationApprove, and puts it back in any other request that changes
// it. The Controller trusts the annotation only after a dry run shows the
// policy rewriting it (approverVerified).

// ApproverPolicyName is the name of the policy and binding ApproverPolicy
// returns.
const ApproverPolicyName = "fleetgraph-approver.graphrollouts.fleetgraph.dev"

// approverProbeValue is the AnnotationApprove value approverVerified's dry
// run sets, and forgedApprover the AnnotationApprovedBy value it forges:
// an active policy replaces the latter with the hub's own user name.
const (
	approverProbeValue = "fleetgraph.dev/approver-probe"
	forgedApprover     = "fleetgraph.dev/forged-approver"
)

// annotation is the CEL expression of annotation key on obj ("object" or
// "oldObject"), "" when absent.
func annotation(obj, key string) string {
	guard := fmt.Sprintf("has(%[1]s.metadata.annotations) && %[2]q in %[1]s.metadata.annotations", obj, key)
	if obj == "oldObject" {
		guard = "oldObject != null && " + guard
	}
	return fmt.Sprintf("(%s ? %s.metadata.annotations[%q] : '')", guard, obj, key)
}

// ApproverPolicy returns the MutatingAdmissionPolicy, and its binding,
// that make AnnotationApprovedBy the user name of whoever changed
// AnnotationApprove to a value, and restore it in every other create or
// update of a GraphRollout that changes it. It fails closed: a request it
// cannot evaluate is refused rather than let through unstamped.
func ApproverPolicy() []client.Object {
	approve, by := fgv1alpha1.AnnotationApprove, fgv1alpha1.AnnotationApprovedBy
	path := "/metadata/annotations/" + strings.ReplaceAll(by, "/", "~1")
	set := func(value string) string {
		return fmt.Sprintf("[JSONPatch{op: 'add', path: %q, value: %s}]", path, value)
	}
	mutation := fmt.Sprintf("variables.newApprove != '' && variables.newApprove != variables.oldApprove ? %s : "+
		"variables.oldBy != '' ? %s : variables.newBy != '' ? [JSONPatch{op: 'remove', path: %q}] : []",
		set("request.userInfo.username"), set("variables.oldBy"), path)
	changed := fmt.Sprintf("%s != %s || %s != %s",
		annotation("object", approve), annotation("oldObject", approve), annotation("object", by), annotation("oldObject", by))
	labels := map[string]string{contract.LabelManagedBy: contract.ManagedBy}
	policy := &admissionv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: ApproverPolicyName, Labels: labels},
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			MatchConstraints: rolloutWrites(admissionv1.Create, admissionv1.Update),
			MatchConditions:  []admissionv1.MatchCondition{{Name: "approval-changed", Expression: changed}},
			Variables: []admissionv1.Variable{
				{Name: "newApprove", Expression: annotation("object", approve)},
				{Name: "oldApprove", Expression: annotation("oldObject", approve)},
				{Name: "newBy", Expression: annotation("object", by)},
				{Name: "oldBy", Expression: annotation("oldObject", by)},
			},
			Mutations: []admissionv1.Mutation{{
				PatchType: admissionv1.PatchTypeJSONPatch,
				JSONPatch: &admissionv1.JSONPatch{Expression: mutation},
			}},
			FailurePolicy:      ptr.To(admissionv1.Fail),
			ReinvocationPolicy: admissionv1.IfNeededReinvocationPolicy,
		},
	}
	binding := &admissionv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: ApproverPolicyName, Labels: labels},
		Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: ApproverPolicyName},
	}
	return []client.Object{policy, binding}
}

// rolloutWrites matches ops on GraphRollouts (not their status).
func rolloutWrites(ops ...admissionv1.OperationType) *admissionv1.MatchResources {
	return &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: ops,
			Rule: admissionv1.Rule{
				APIGroups:   []string{fgv1alpha1.GroupVersion.Group},
				APIVersions: []string{"*"},
				Resources:   []string{"graphrollouts"},
			},
		},
	}}}
}

// ApproverProbe returns the probe policy and binding, and the dry-run
// object, that tell when ApproverPolicy can be bound without the API
// server refusing GraphRollout writes (see contract.AdmissionProbe).
func ApproverProbe() (probe []client.Object, object client.Object) {
	g := &graph.Graph{Name: "graphrollouts", Instance: graph.Instance{
		GVK: fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind), Plural: "graphrollouts"}}
	return contract.ProbePolicy(g, "fleetgraph-approver-probe.graphrollouts.fleetgraph.dev"), contract.AdmissionProbeObject(g)
}

// approverVerified reports whether the API server runs ApproverPolicy on
// ro now: a dry-run patch that sets AnnotationApprove and forges
// AnnotationApprovedBy comes back with the forgery replaced.
func (c *Controller) approverVerified(ctx context.Context, ro *fgv1alpha1.GraphRollout) bool {
	if !c.ApproverPolicy {
		return false
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		fgv1alpha1.AnnotationApprove: approverProbeValue, fgv1alpha1.AnnotationApprovedBy: forgedApprover}}})
	if err != nil {
		return false
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(fgv1alpha1.GraphRolloutKind))
	u.SetName(ro.Name)
	if err := c.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), client.DryRunAll, client.FieldOwner(c.fieldManager())); err != nil {
		c.Logger.Info("checking the approver admission policy; approvals are recorded as unverified", "rollout", ro.Name, "reason", err.Error())
		return false
	}
	got := u.GetAnnotations()[fgv1alpha1.AnnotationApprovedBy]
	return got != "" && got != forgedApprover && c.approveChecked(ctx, ro)
}

// approveChecked reports whether ApproveCheck's binding is in place: the
// API server then let AnnotationApprove through only from someone who may
// approve.
func (c *Controller) approveChecked(ctx context.Context, ro *fgv1alpha1.GraphRollout) bool {
	b := &metav1.PartialObjectMetadata{}
	b.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding"))
	if err := c.Client.Get(ctx, client.ObjectKey{Name: ApproveCheckName}, b); err != nil {
		c.Logger.Info("checking the approve admission policy; approvals are recorded as unverified", "rollout", ro.Name, "reason", err.Error())
		return false
	}
	return true
}

// ApproveCheckName is the name of the ValidatingAdmissionPolicy, and its
// binding, that ApproveCheck returns.
const ApproveCheckName = "fleetgraph-approve.graphrollouts.fleetgraph.dev"

// ApproveVerb is the verb on graphrollouts that approving takes, granted
// apart from editing the rollout, as Kubernetes' "approve" on signers is
// for certificate requests.
const ApproveVerb = "approve"

// ApproveCheck returns the ValidatingAdmissionPolicy, and its binding,
// that refuse a create or update setting AnnotationApprove to a new value
// unless the requester may ApproveVerb the GraphRollout: whoever may only
// edit a rollout cannot approve its waves. Clearing the annotation (the
// hub consumes it) is never checked.
func ApproveCheck() []client.Object {
	approve := fgv1alpha1.AnnotationApprove
	changed := fmt.Sprintf("%s != '' && %s != %s", annotation("object", approve), annotation("object", approve), annotation("oldObject", approve))
	allowed := fmt.Sprintf("authorizer.group(%q).resource(\"graphrollouts\").name(object.metadata.name).check(%q).allowed()",
		fgv1alpha1.GroupVersion.Group, ApproveVerb)
	labels := map[string]string{contract.LabelManagedBy: contract.ManagedBy}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: ApproveCheckName, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: rolloutWrites(admissionv1.Create, admissionv1.Update),
			MatchConditions:  []admissionv1.MatchCondition{{Name: "approval-set", Expression: changed}},
			Validations: []admissionv1.Validation{{
				Expression: allowed,
				Message: fmt.Sprintf("setting %s approves a wave: it needs the verb %q on graphrollouts.%s, granted apart from editing the rollout",
					approve, ApproveVerb, fgv1alpha1.GroupVersion.Group),
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
			FailurePolicy: ptr.To(admissionv1.Fail),
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: ApproveCheckName, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        ApproveCheckName,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return []client.Object{policy, binding}
}
