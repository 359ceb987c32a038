package v1alpha1

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kro "github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// GraphRolloutKind is the kind of a placement and rollout policy.
const GraphRolloutKind = "GraphRollout"

// GraphRolloutCRDName is the name of the GraphRollout CRD.
const GraphRolloutCRDName = "graphrollouts.fleetgraph.dev"

// MaxWaves is how many waves a GraphRollout may have.
const MaxWaves = 32

// MaxApprovals is how many approvals status.approvals keeps: room for
// every wave of two revisions; beyond it the oldest go first.
const MaxApprovals = 2 * (MaxWaves + 1)

// AnnotationResume, set on a GraphRollout to a value other than
// status.resumed, restarts a failed wave: its clock starts again.
const AnnotationResume = "fleetgraph.dev/resume"

// AnnotationApprove, set on a GraphRollout, approves the wave it names (by
// name, for the revision being rolled out) or every wave of the revision
// it names (by number, in decimal). The hub records the approval in
// status.approvals and then removes the annotation, so one left behind
// never approves a later revision. A number that names no revision
// published yet (or one that can no longer be rolled out) is ignored,
// with an ApprovalIgnored event, and removed all the same. Its value format is the CLI's
// (fleetgraph rollout approve).
const AnnotationApprove = "fleetgraph.dev/approve"

// AnnotationApprovedBy, on a GraphRollout, is who set AnnotationApprove,
// as the API server tells (request.userInfo.username): the hub's
// admission policy on GraphRollouts writes it in the request that
// changes AnnotationApprove and restores it in any other request, so
// nobody writes it directly. The hub reads it only while it has verified
// that policy active; otherwise it records the approver as unverified.
const AnnotationApprovedBy = "fleetgraph.dev/approved-by"

// ApprovalRequired, as a wave's approval, holds the wave before it starts
// until it is approved.
const ApprovalRequired = "Required"

// The phases of a rollout.
const (
	// RolloutProgressing: a wave is rolling the target revision out.
	RolloutProgressing = "Progressing"
	// RolloutPaused: spec.paused holds the rollout where it is.
	RolloutPaused = "Paused"
	// RolloutFailed: a wave was not healthy within the progress deadline.
	// Clusters it did not reach keep the stable revision. Resume with the
	// AnnotationResume annotation or roll back with spec.rollbackTo.
	RolloutFailed = "Failed"
	// RolloutComplete: every placed cluster serves the target revision.
	RolloutComplete = "Complete"
	// RolloutRolledBack: spec.rollbackTo names the revision every placed
	// cluster serves (at once, or, with rollbackStrategy Waves, once its
	// last wave went back: status.rollbackReason is then "Manual"), or
	// (onFailure: Rollback) a failed target revision went back to the
	// stable one on every cluster it reached.
	RolloutRolledBack = "RolledBack"
	// RolloutRollingBack: with onFailure: Rollback, a wave failed past its
	// budget and the clusters it and earlier waves moved go back to the
	// stable revision, wave by wave, last wave first; or, with
	// rollbackStrategy Waves, spec.rollbackTo goes through the waves, first
	// wave first (status.manualRollback is set).
	RolloutRollingBack = "RollingBack"
)

// How spec.rollbackTo reaches the clusters (GraphRolloutSpec.RollbackStrategy).
const (
	// RollbackAllAtOnce moves every placed cluster to spec.rollbackTo at
	// once.
	RollbackAllAtOnce = "AllAtOnce"
	// RollbackInWaves moves the placed clusters to spec.rollbackTo wave by
	// wave, first wave first, as a rollout of that revision would.
	RollbackInWaves = "Waves"
)

// RollbackReasonManual is status.rollbackReason while and after
// spec.rollbackTo goes back in waves.
const RollbackReasonManual = "Manual"

// What a rollout does when a wave fails past its maxFailures budget
// (GraphRolloutSpec.OnFailure).
const (
	// OnFailurePause stops the rollout where it is (phase Failed): clusters
	// already moved keep the target revision until resumed or rolled back.
	OnFailurePause = "Pause"
	// OnFailureRollback moves every cluster the target revision reached
	// back to the stable revision, in reverse wave order, and ends the
	// rollout RolledBack.
	OnFailureRollback = "Rollback"
)

// GraphRollout places one graph (a ResourceGraphDefinition, or a graph
// registered from Go, by name) on the clusters whose labels its selector
// matches, and rolls every new revision of it out over those clusters in
// waves. The RGD itself stays as kro defines it.
//
// +kubebuilder:object:root=true
type GraphRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GraphRolloutSpec   `json:"spec"`
	Status            GraphRolloutStatus `json:"status,omitempty"`
}

// GraphRolloutList is a list of GraphRollouts.
//
// +kubebuilder:object:root=true
type GraphRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GraphRollout `json:"items"`
}

// GraphRolloutSpec says where a graph is served and how a new revision
// reaches those clusters.
type GraphRolloutSpec struct {
	// Graph names the graph (the RGD's name). One GraphRollout per graph:
	// of several, the oldest is used.
	Graph string `json:"graph"`
	// ClusterSelector picks the clusters that serve the graph, by the
	// labels the provider gives them. Nil selects every cluster. A cluster
	// that stops matching is served no more; its CRD and instances stay
	// (the instances are released: their finalizer is taken off).
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// PlacementDecision, when set, narrows the placed clusters to those a
	// PlacementDecision (multicluster.x-k8s.io/v1alpha1, KEP-5313) on the
	// hub lists, intersected with ClusterSelector and the Go placement
	// hook. A change in the decision moves clusters in and out as a
	// relabel does: through the waves, gates and holds above. A decision
	// that cannot be read (missing, unreadable, too many slices) keeps
	// the clusters placed as they were and says why in the condition
	// PlacementDecisionRead. Whoever may write PlacementDecisions in its
	// namespace decides where the graph runs. Defaults to nil: placement
	// by ClusterSelector alone.
	PlacementDecision *PlacementDecisionRef `json:"placementDecision,omitempty"`
	// Waves are the steps a new revision takes, in order. A cluster belongs
	// to the first wave that takes it; placed clusters no wave takes join
	// the last wave. No waves: one wave of every placed cluster.
	Waves []Wave `json:"waves,omitempty"`
	// Health is what a wave's clusters must show before the next wave
	// starts.
	Health HealthPolicy `json:"health,omitempty"`
	// ProgressDeadlineSeconds is how long a wave may take to become
	// healthy before the rollout fails (and stops). Defaults to 600.
	ProgressDeadlineSeconds int64 `json:"progressDeadlineSeconds,omitempty"`
	// Paused holds the rollout at the wave it reached. Defaults to false.
	Paused bool `json:"paused,omitempty"`
	// RollbackTo, when set, is the revision number every placed cluster
	// serves: at once, or in waves (RollbackStrategy); the rollout of any
	// other revision stops. Clear it to roll the latest revision out again
	// from the first wave.
	RollbackTo int64 `json:"rollbackTo,omitempty"`
	// RollbackStrategy says how RollbackTo reaches the clusters.
	// RollbackAllAtOnce ("AllAtOnce") moves every placed cluster at once
	// and the rollout is RolledBack at once. RollbackInWaves ("Waves")
	// rolls RollbackTo out through the waves above, first wave first, as a
	// rollout of that revision: each wave waits for its approval, moves at
	// most its maxConcurrency at a time, and must be healthy on RollbackTo
	// itself (readyPercent, soakSeconds, maxErrorPercent,
	// instanceCondition; status an older revision wrote never counts)
	// before the next one goes; a wave that misses its deadline past its
	// maxFailures stops the rollback (phase Failed; onFailure Rollback
	// does not apply to a rollback). Meanwhile the phase is RollingBack,
	// status.manualRollback is its cursor (it survives a hub restart), and
	// status.stableRevision stays the revision the fleet stood on before
	// (what clusters of waves not reached yet keep serving); a cluster
	// that fails its wave within maxFailures keeps RollbackTo. Once the
	// last wave is healthy the phase is RolledBack (rollbackReason
	// "Manual") and RollbackTo becomes the stable revision. Paused holds
	// the rollback at the wave it reached, as it holds a rollout. A
	// revision published meanwhile reaches no cluster until RollbackTo is
	// cleared; then it rolls out from the first wave. Changing RollbackTo
	// starts the rollback again from the first wave; switching to
	// AllAtOnce finishes it at once. While spec.health.instanceCondition
	// is refused (HealthConditionValid False) a rollback in waves does not
	// start; one at once does. Defaults to "AllAtOnce".
	RollbackStrategy string `json:"rollbackStrategy,omitempty"`

	// OnFailure is what happens when a wave fails past its maxFailures:
	// OnFailurePause ("Pause") stops the rollout there (phase Failed);
	// OnFailureRollback ("Rollback") moves the clusters the target reached
	// back to the stable revision, last wave first, each wave once the one
	// after it serves the stable revision healthily (or its progress
	// deadline passed), and ends the rollout RolledBack with the reason.
	// Defaults to "Pause".
	OnFailure string `json:"onFailure,omitempty"`

	// Holds pin clusters to the revision each serves when the hold first
	// takes it (status.clusters[].desired records it, with held true): the
	// rollout goes on elsewhere and skips them (a held cluster counts
	// neither toward its wave's health nor toward its maxFailures), and
	// neither a new revision nor spec.rollbackTo moves them. Removing the
	// hold lets the cluster catch up through the wave logic: at once if its
	// wave has already taken the target, else when its wave starts. At
	// most MaxHolds. Defaults to none.
	Holds []Hold `json:"holds,omitempty"`
}

// PlacementDecisionRef names the PlacementDecision a GraphRollout follows.
//
// Its decision is the union of the PlacementDecision named Name and
// every PlacementDecision slice labelled multicluster.x-k8s.io/decision-key
// = Name, all in Namespace; at most MaxDecisionSlices slices of at most
// MaxDecisionsPerSlice clusters each are read, and a decision with more is
// refused as unreadable. A listed ClusterProfileRef matches the cluster
// the provider names as the profile's name (the ClusterProfile provider
// names each cluster after its profile); the ref's namespace is the
// provider's concern and is not compared. A decision that exists and lists
// no cluster places the graph nowhere.
type PlacementDecisionRef struct {
	// Namespace is the hub namespace of the decision.
	Namespace string `json:"namespace"`
	// Name is the decision's name or decision key.
	Name string `json:"name"`
}

// MaxDecisionSlices is how many PlacementDecision slices one decision may
// span, as GraphRolloutSpec.PlacementDecision reads it.
const MaxDecisionSlices = 50

// MaxDecisionsPerSlice is how many clusters one PlacementDecision slice may
// list (the PlacementDecision API's own bound).
const MaxDecisionsPerSlice = 100

// ConditionPlacementDecisionRead is the GraphRollout status condition that
// says whether spec.placementDecision was read; when False, its message
// says why and that the clusters placed before are kept.
const ConditionPlacementDecisionRead = "PlacementDecisionRead"

// ConditionPlacementPublished is the GraphRollout status condition that
// says whether the hub published the clusters it places the graph on as
// PlacementDecision slices (when the hub is configured to publish).
const ConditionPlacementPublished = "PlacementPublished"

// MaxHoldingBackListed bounds status.holdingBack: a wave of thousands of
// clusters would otherwise list each of them twice (in status.clusters and
// there), and at 10,000 clusters the object would pass what etcd stores.
// status.holdingBackCount counts them all, and status.clusters gives each
// its why.
const MaxHoldingBackListed = 100

// MaxFailedClusters is how many clusters one revision's rollout records
// as failed within their waves' maxFailures, in all its waves: one more
// fails the rollout, whatever maxFailures allows. Each failed cluster is
// listed in status.failed and status.clusters with why; past a few
// thousand of them, at 10,000 clusters, the object would pass what etcd
// stores, and a rollout that cannot write its status stops moving.
const MaxFailedClusters = 2000

// MaxHolds is how many holds a GraphRollout may have.
const MaxHolds = 64

// MaxHoldClusters is how many cluster names one hold may list.
const MaxHoldClusters = 256

// Hold pins clusters, by name or by label selector (exactly one), to the
// revision each serves.
type Hold struct {
	// Clusters names the held clusters.
	Clusters []string `json:"clusters,omitempty"`
	// ClusterSelector holds the placed clusters whose labels match.
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// Reason says why, for status and events. Defaults to "".
	Reason string `json:"reason,omitempty"`
}

// Wave picks clusters by exactly one of a selector, a count or a share.
type Wave struct {
	// Name shows in status and events. Defaults to "wave-<n>", from 1.
	Name string `json:"name,omitempty"`
	// ClusterSelector takes the placed clusters, not taken by an earlier
	// wave, whose labels match.
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// Clusters takes this many placed clusters not taken yet, in name
	// order.
	Clusters int32 `json:"clusters,omitempty"`
	// Percent takes this share of all placed clusters (rounded up) among
	// those not taken yet, in name order.
	Percent int32 `json:"percent,omitempty"`
	// Approval "Required" holds the wave before any of its clusters takes
	// the revision, until it is approved (AnnotationApprove, or
	// sdk.Hub.Approve); status.awaitingApproval names the wave meanwhile
	// and its deadline counts from the approval. Defaults to "" (none).
	Approval string `json:"approval,omitempty"`
	// MaxFailures is how many of the wave's clusters (a count, or a
	// percent of them like "25%", rounded down) may fail: still be
	// unhealthy at the progress deadline; a value that is neither allows
	// none. Within it they are listed in
	// status.failed, go back to (or stay on) the stable revision, and the
	// rollout goes on; past it the rollout fails. However large, it lets
	// no more than MaxFailedClusters fail in all the rollout's waves.
	// Defaults to 0.
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`

	// MaxConcurrency is how many of the wave's clusters (a count, or a
	// percent of them like "25%", rounded up) may be moving at once:
	// allowed the target revision and not yet healthy or failed. The next
	// cluster, in name order, starts when one becomes healthy or fails;
	// each one's progress deadline counts from its own start. Values below
	// 1, and a string that is neither, allow 1. Defaults to nil: every
	// cluster of the wave at once.
	MaxConcurrency *intstr.IntOrString `json:"maxConcurrency,omitempty"`
}

// HealthPolicy says when a wave is healthy: every cluster of it serves the
// target revision, its CRD is established, at least ReadyPercent of its
// instances are Ready, and all of this has held for SoakSeconds.
type HealthPolicy struct {
	// ReadyPercent is the share of a cluster's instances that must be
	// Ready. Defaults to 100. A cluster without instances passes.
	ReadyPercent *int32 `json:"readyPercent,omitempty"`
	// SoakSeconds is how long a wave must stay healthy. Defaults to 0.
	SoakSeconds int64 `json:"soakSeconds,omitempty"`

	// MaxErrorPercent is the largest share of a cluster's instances that
	// may be in ERROR, as the revision being rolled out itself reconciled
	// them (an ERROR an earlier revision wrote does not count, nor does an
	// ACTIVE that hides an ERROR the new revision could not write). Nil
	// puts no bound beyond ReadyPercent. Defaults to nil.
	MaxErrorPercent *int32 `json:"maxErrorPercent,omitempty"`
	// InstanceCondition is a CEL expression over each instance, as
	// `instance` (typed by the graph's generated CRD: metadata, spec and
	// status), that must be true for the instance to count as Ready: for
	// example `instance.status.availableReplicas >= instance.spec.replicas`.
	// It is type-checked against each revision rolled out; one that does
	// not compile holds the rollout (condition HealthConditionValid False,
	// an event naming the expression). Each evaluation is bounded by the
	// graph's CEL limits; one that fails or passes a limit counts the
	// instance as not Ready. Defaults to "" (none).
	InstanceCondition string `json:"instanceCondition,omitempty"`
}

// MaxInstanceConditionLength is the longest InstanceCondition accepted.
const MaxInstanceConditionLength = 4096

// ConditionHealthConditionValid is the GraphRollout status condition that
// says whether spec.health.instanceCondition type-checks against the
// revision being rolled out.
const ConditionHealthConditionValid = "HealthConditionValid"

// GraphRolloutStatus is the rollout's progress, written by the hub.
type GraphRolloutStatus struct {
	// Phase is one of the Rollout* constants.
	Phase string `json:"phase,omitempty"`
	// TargetRevision is the revision being rolled out (or rolled back to).
	TargetRevision int64 `json:"targetRevision,omitempty"`
	// StableRevision is the revision the last complete rollout (or manual
	// rollback) reached: what clusters not reached yet keep serving.
	StableRevision int64 `json:"stableRevision,omitempty"`
	// Wave is the index of the wave in progress, from 0; it equals the
	// number of waves once the rollout is complete.
	Wave int32 `json:"wave"`
	// WaveName is the name of the wave in progress.
	WaveName string `json:"waveName,omitempty"`
	// WaveStarted is when the wave in progress started.
	WaveStarted *metav1.Time `json:"waveStarted,omitempty"`
	// HealthySince is since when the wave in progress has been healthy.
	HealthySince *metav1.Time `json:"healthySince,omitempty"`
	// Resumed is the last AnnotationResume value acted upon, or seen while
	// the rollout had not failed (such a value retries nothing).
	Resumed string `json:"resumed,omitempty"`
	// AwaitingApproval names the wave that waits for approval before it
	// starts ("" when none does).
	AwaitingApproval string `json:"awaitingApproval,omitempty"`
	// Approvals are the approvals given for the target revision (and for
	// later published revisions, by number); a new target keeps only its
	// own. Approvals that can no longer apply are pruned, and at most
	// MaxApprovals are kept.
	Approvals []RolloutApproval `json:"approvals,omitempty"`
	// Message explains the phase.
	Message string `json:"message,omitempty"`
	// Clusters is every placed cluster: its wave and what it serves.
	Clusters []RolloutCluster `json:"clusters,omitempty"`
	// HoldingBack names the clusters of the wave in progress that keep it
	// from being healthy, with why (a breaking change refused, instances
	// not Ready, ...): the first MaxHoldingBackListed by name. Every one of
	// them, listed or not, also has its why in Clusters.
	HoldingBack []RolloutCluster `json:"holdingBack,omitempty"`
	// HoldingBackCount is how many clusters hold the wave in progress
	// back, HoldingBack's entries and those past its bound.
	HoldingBackCount int32 `json:"holdingBackCount,omitempty"`
	// Failed lists the clusters that failed a wave of the target revision
	// within its maxFailures, each with why; Revision is the revision the
	// cluster went back to (or stayed on). A new target clears it.
	Failed []RolloutCluster `json:"failed,omitempty"`
	// ObservedGeneration is the generation of the spec the status is for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: HealthConditionValid.
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Moving, for a wave with maxConcurrency, lists the clusters allowed
	// the target revision that are not healthy or failed yet, with since
	// when (their progress deadline counts from then).
	Moving []RolloutMove `json:"moving,omitempty"`
	// Moved, for a wave with maxConcurrency, names the clusters that moved
	// and became healthy; they keep the target revision.
	Moved []string `json:"moved,omitempty"`
	// RollbackWave, set while onFailure: Rollback takes the target back
	// (and once it has), is the index of the wave going back now: its
	// clusters and those of later waves are held off the target revision
	// and serve the stable one.
	RollbackWave *int32 `json:"rollbackWave,omitempty"`
	// RollbackReason says why the rollout is rolling (or was rolled) back:
	// the failure, or RollbackReasonManual for spec.rollbackTo in waves.
	RollbackReason string `json:"rollbackReason,omitempty"`
	// ManualRollback, set while spec.rollbackTo goes back in waves (and
	// once it has, until a new target), is that rollback's own record and
	// cursor.
	ManualRollback *ManualRollback `json:"manualRollback,omitempty"`
}

// ManualRollback is the progress of spec.rollbackTo in waves.
type ManualRollback struct {
	// Revision is the revision rolled back to (spec.rollbackTo).
	Revision int64 `json:"revision"`
	// From is the stable revision when the rollback started: what the
	// clusters of waves not reached yet keep serving.
	From int64 `json:"from,omitempty"`
	// Wave is the index of the wave going back now, from 0; it equals the
	// number of waves once every wave went back. A restarted hub resumes
	// the rollback here.
	Wave int32 `json:"wave"`
	// WaveName is the name of the wave going back now ("done" after the
	// last).
	WaveName string `json:"waveName,omitempty"`
	// Started is when the rollback started.
	Started metav1.Time `json:"started"`
}

// RolloutMove is a cluster moving to the target revision.
type RolloutMove struct {
	// Name is the provider's name for the cluster.
	Name string `json:"name"`
	// Since is when the cluster was allowed the target revision.
	Since metav1.Time `json:"since"`
}

// RolloutCluster is one cluster as a rollout sees it.
type RolloutCluster struct {
	// Name is the provider's name for the cluster.
	Name string `json:"name"`
	// Wave is the index of the cluster's wave.
	Wave int32 `json:"wave"`
	// Revision is the revision serving the cluster (0: none).
	Revision int64 `json:"revision,omitempty"`
	// Message says why the cluster is not healthy, if it is not (in
	// status.clusters: why it failed, or why it waits).
	Message string `json:"message,omitempty"`

	// The fields below are filled in status.clusters only.

	// Desired is the revision the rollout wants the cluster to serve now:
	// the target once its wave has started, the revision it went back to
	// after a failure, the pinned one while held, else what it serves.
	Desired int64 `json:"desired,omitempty"`
	// FailedRevision is the revision the cluster failed (0: none); Message
	// says why.
	FailedRevision int64 `json:"failedRevision,omitempty"`
	// Held reports that a hold (spec.holds) pins the cluster at Desired;
	// HoldReason is the hold's reason.
	Held       bool   `json:"held,omitempty"`
	HoldReason string `json:"holdReason,omitempty"`
}

// RolloutApproval is one approval the hub acted upon.
type RolloutApproval struct {
	// Revision is the revision approved.
	Revision int64 `json:"revision"`
	// Wave is the wave approved, by name; "" approves every wave of the
	// revision.
	Wave string `json:"wave,omitempty"`
	// By is who approved: the user the API server authenticated for the
	// request that set AnnotationApprove (AnnotationApprovedBy). "" when
	// the hub could not verify it (its admission policy on GraphRollouts
	// off or not active yet); the Approved event says so.
	By string `json:"by,omitempty"`
	// At is when the hub recorded the approval.
	At metav1.Time `json:"at"`
}

// GraphRolloutCRD returns the CRD that serves GraphRollout on the hub.
func GraphRolloutCRD() *apiextensionsv1.CustomResourceDefinition {
	obj := object
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	nonNegative := apiextensionsv1.JSONSchemaProps{Type: "integer", Minimum: ptr.To(0.0)}
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	selector := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	wave := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"name": str, "clusterSelector": selector, "clusters": nonNegative,
		"percent": {Type: "integer", Minimum: ptr.To(0.0), Maximum: ptr.To(100.0)},
		// Any string: an invalid one allows no failure (a CEL check of the
		// percent costs more than a CRD may spend over 32 waves).
		"maxFailures": {XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}},
		"approval":    {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`""`)}, {Raw: []byte(`"` + ApprovalRequired + `"`)}}},
		// Any string, like maxFailures: an invalid one allows 1.
		"maxConcurrency": {XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}},
	})
	wave.XValidations = apiextensionsv1.ValidationRules{{
		Rule:    "(has(self.clusterSelector) ? 1 : 0) + (has(self.clusters) ? 1 : 0) + (has(self.percent) ? 1 : 0) == 1",
		Message: "a wave has exactly one of clusterSelector, clusters, percent",
	}}
	spec := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"graph":                   {Type: "string", MinLength: ptr.To[int64](1)},
		"clusterSelector":         selector,
		"placementDecision":       placementDecisionSchema(),
		"waves":                   {Type: "array", MaxItems: ptr.To[int64](MaxWaves), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &wave}},
		"health":                  healthSchema(nonNegative),
		"progressDeadlineSeconds": nonNegative,
		"paused":                  {Type: "boolean"},
		"rollbackTo":              nonNegative,
		"rollbackStrategy": {Type: "string", Enum: []apiextensionsv1.JSON{
			{Raw: []byte(`""`)}, {Raw: []byte(`"` + RollbackAllAtOnce + `"`)}, {Raw: []byte(`"` + RollbackInWaves + `"`)},
		}},
		"holds": holdsSchema(selector),
		"onFailure": {Type: "string", Enum: []apiextensionsv1.JSON{
			{Raw: []byte(`""`)}, {Raw: []byte(`"` + OnFailurePause + `"`)}, {Raw: []byte(`"` + OnFailureRollback + `"`)},
		}},
	}, "graph")
	cluster := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"name": str, "wave": integer, "revision": integer, "message": str,
		"desired": integer, "failedRevision": integer, "held": {Type: "boolean"}, "holdReason": str,
	}, "name")
	clusters := apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &cluster}}
	approval := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"revision": integer, "wave": str, "by": str, "at": {Type: "string", Format: "date-time"},
	}, "revision")
	status := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"phase": str, "targetRevision": integer, "stableRevision": integer, "wave": integer, "waveName": str,
		"waveStarted": {Type: "string", Format: "date-time"}, "healthySince": {Type: "string", Format: "date-time"},
		"resumed": str, "awaitingApproval": str,
		"approvals": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &approval}},
		"message":   str, "clusters": clusters, "holdingBack": clusters, "holdingBackCount": integer, "failed": clusters, "observedGeneration": integer,
		"conditions": conditionsSchema(),
		"moving": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: ptr.To(obj(map[string]apiextensionsv1.JSONSchemaProps{
			"name": str, "since": {Type: "string", Format: "date-time"},
		}, "name"))}},
		"moved":          {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
		"rollbackWave":   integer,
		"rollbackReason": str,
		"manualRollback": obj(map[string]apiextensionsv1.JSONSchemaProps{
			"revision": integer, "from": integer, "wave": integer, "waveName": str,
			"started": {Type: "string", Format: "date-time"},
		}, "revision"),
	})
	return hubCRD(GraphRolloutKind, "graphrollouts", "fgro", apiextensionsv1.CustomResourceDefinitionVersion{
		Name: GroupVersion.Version, Served: true, Storage: true,
		Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type:       "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": status},
			Required:   []string{"spec"},
		}},
		AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "GRAPH", Type: "string", JSONPath: ".spec.graph"},
			{Name: "TARGET", Type: "integer", JSONPath: ".status.targetRevision"},
			{Name: "STABLE", Type: "integer", JSONPath: ".status.stableRevision"},
			{Name: "WAVE", Type: "string", JSONPath: ".status.waveName"},
			{Name: "HOLDING-BACK", Type: "integer", JSONPath: ".status.holdingBackCount"},
			{Name: "PHASE", Type: "string", JSONPath: ".status.phase"},
			{Name: "AWAITING-APPROVAL", Type: "string", JSONPath: ".status.awaitingApproval"},
			{Name: "FAILED", Type: "string", JSONPath: ".status.failed[*].name"},
			{Name: "MOVING", Type: "string", JSONPath: ".status.moving[*].name"},
			{Name: "HELD", Type: "string", JSONPath: ".status.clusters[?(@.held)].name"},
			{Name: "MANUAL-ROLLBACK", Type: "string", JSONPath: ".status.manualRollback.waveName"},
			{Name: "AGE", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
	})
}

// healthSchema is spec.health's schema.
func healthSchema(nonNegative apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	percent := apiextensionsv1.JSONSchemaProps{Type: "integer", Minimum: ptr.To(0.0), Maximum: ptr.To(100.0)}
	return object(map[string]apiextensionsv1.JSONSchemaProps{
		"readyPercent": percent, "soakSeconds": nonNegative, "maxErrorPercent": percent,
		"instanceCondition": {Type: "string", MaxLength: ptr.To[int64](MaxInstanceConditionLength)},
	})
}

// placementDecisionSchema is spec.placementDecision's schema: a namespace
// and a name (or decision key, a label value) on the hub.
func placementDecisionSchema() apiextensionsv1.JSONSchemaProps {
	return object(map[string]apiextensionsv1.JSONSchemaProps{
		"namespace": {Type: "string", MinLength: ptr.To[int64](1), MaxLength: ptr.To[int64](63)},
		"name":      {Type: "string", MinLength: ptr.To[int64](1), MaxLength: ptr.To[int64](253)},
	}, "namespace", "name")
}

// holdsSchema is spec.holds' schema: each hold names clusters or selects
// them, not both.
func holdsSchema(selector apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	name := apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr.To[int64](253)}
	hold := object(map[string]apiextensionsv1.JSONSchemaProps{
		"clusters":        {Type: "array", MaxItems: ptr.To[int64](MaxHoldClusters), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &name}},
		"clusterSelector": selector,
		"reason":          {Type: "string", MaxLength: ptr.To[int64](256)},
	})
	hold.XValidations = apiextensionsv1.ValidationRules{{
		Rule:    "has(self.clusters) != has(self.clusterSelector)",
		Message: "a hold has exactly one of clusters, clusterSelector",
	}}
	return apiextensionsv1.JSONSchemaProps{Type: "array", MaxItems: ptr.To[int64](MaxHolds), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &hold}}
}

// conditionsSchema is the schema of a list of metav1.Conditions.
func conditionsSchema() apiextensionsv1.JSONSchemaProps {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	cond := object(map[string]apiextensionsv1.JSONSchemaProps{
		"type": str, "status": str, "reason": str, "message": str,
		"observedGeneration": {Type: "integer", Format: "int64"},
		"lastTransitionTime": {Type: "string", Format: "date-time"},
	}, "type", "status")
	return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &cond}}
}

// object is an OpenAPI object schema with the given properties.
func object(props map[string]apiextensionsv1.JSONSchemaProps, required ...string) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props, Required: required}
}

// hubCRD is a cluster-scoped CRD of fleetgraph's group, labelled as ours,
// serving kind at version v.
func hubCRD(kind, plural, short string, v apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{
			Name:   plural + "." + GroupVersion.Group,
			Labels: map[string]string{kro.LabelManagedBy: kro.ManagedByFleetgraph},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: GroupVersion.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: plural, Singular: strings.ToLower(kind), Kind: kind,
				ListKind: kind + "List", ShortNames: []string{short},
			},
			Scope:    apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{v},
		},
	}
}
