package v1alpha1

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

// PullClusterCRD returns the CRD that serves PullCluster on the hub:
// cluster-scoped, so that only the platform (not a tenant's namespaced
// permissions, nor an agent's) can create or label one.
func PullClusterCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	spec := object(map[string]apiextensionsv1.JSONSchemaProps{
		"heartbeatGraceSeconds": {Type: "integer", Format: "int32", Minimum: ptr.To(0.0)},
	})
	status := object(map[string]apiextensionsv1.JSONSchemaProps{
		"namespace": str, "serviceAccount": str,
		"lastHeartbeat": {Type: "string", Format: "date-time"},
		"graphs":        {Type: "integer", Format: "int32"},
		"conditions":    conditionsSchema(),
	})
	crd := hubCRD(PullClusterKind, "pullclusters", "fgpc", apiextensionsv1.CustomResourceDefinitionVersion{
		Name: GroupVersion.Version, Served: true, Storage: true,
		Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type:       "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": status},
			XValidations: apiextensionsv1.ValidationRules{{
				Rule: fmt.Sprintf("self.metadata.name.size() <= %d && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
					MaxPullClusterNameLength),
				Message: fmt.Sprintf("a PullCluster's name is a DNS label of at most %d characters: its namespace on the hub is %q followed by it",
					MaxPullClusterNameLength, PullNamespacePrefix),
			}},
		}},
		AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "NAMESPACE", Type: "string", JSONPath: ".status.namespace"},
			{Name: "REGISTERED", Type: "string", JSONPath: `.status.conditions[?(@.type=="Registered")].status`},
			{Name: "AVAILABLE", Type: "string", JSONPath: `.status.conditions[?(@.type=="AgentAvailable")].status`},
			{Name: "GRAPHS", Type: "integer", JSONPath: ".status.graphs"},
			{Name: "HEARTBEAT", Type: "date", JSONPath: ".status.lastHeartbeat"},
			{Name: "AGE", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
	})
	return crd
}

// GraphAssignmentCRD returns the CRD that serves GraphAssignment on the
// hub, namespaced: each pull cluster's live in its own namespace.
func GraphAssignmentCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	spec := object(map[string]apiextensionsv1.JSONSchemaProps{
		"revision": {Type: "integer", Format: "int64", Minimum: ptr.To(0.0)},
		"snapshot": object(map[string]apiextensionsv1.JSONSchemaProps{
			"name":                 str,
			"generation":           integer,
			"allowBreakingChanges": {Type: "boolean"},
			"spec":                 {Type: "object", XPreserveUnknownFields: ptr.To(true)},
		}, "name", "spec"),
		"cluster": object(map[string]apiextensionsv1.JSONSchemaProps{
			"name":   str,
			"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}},
		}, "name"),
		"values": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
		"removal": {Type: "string", Enum: []apiextensionsv1.JSON{
			{Raw: []byte(`""`)}, {Raw: []byte(`"` + RemovalFinalize + `"`)}, {Raw: []byte(`"` + RemovalRelease + `"`)},
		}},
		"deleteCRD":       {Type: "boolean"},
		"healthCondition": {Type: "string", MaxLength: ptr.To[int64](MaxInstanceConditionLength)},
	}, "revision", "snapshot", "cluster")
	return namespacedHubCRD(GraphAssignmentKind, "graphassignments", "fgas", apiextensionsv1.CustomResourceDefinitionVersion{
		Name: GroupVersion.Version, Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type:       "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
			Required:   []string{"spec"},
		}},
		AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "REVISION", Type: "integer", JSONPath: ".spec.revision"},
			{Name: "REMOVAL", Type: "string", JSONPath: ".spec.removal"},
			{Name: "AGE", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
	})
}

// GraphReportCRD returns the CRD that serves GraphReport on the hub,
// namespaced like GraphAssignment. The whole object is the agent's (no
// status subresource): one write creates or updates it.
func GraphReportCRD() *apiextensionsv1.CustomResourceDefinition {
	message := apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr.To[int64](MaxReportMessageLength)}
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	count := apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32", Minimum: ptr.To(0.0)}
	revision := object(map[string]apiextensionsv1.JSONSchemaProps{"revision": integer, "generation": integer}, "revision")
	status := object(map[string]apiextensionsv1.JSONSchemaProps{
		"observedGeneration": integer,
		"assignedRevision":   integer,
		"crd": object(map[string]apiextensionsv1.JSONSchemaProps{
			"state": {Type: "string", MaxLength: ptr.To[int64](32)}, "message": message,
			"revision": integer, "generation": integer, "since": {Type: "string", Format: "date-time"},
		}, "state"),
		"served": revision,
		"instances": object(map[string]apiextensionsv1.JSONSchemaProps{
			"counted": {Type: "boolean"}, "total": count, "ready": count, "confirmed": count, "errors": count,
		}),
		"removal": object(map[string]apiextensionsv1.JSONSchemaProps{
			"done": {Type: "boolean"}, "held": count, "crdDeleted": {Type: "boolean"}, "message": message,
		}),
		"health": object(map[string]apiextensionsv1.JSONSchemaProps{
			"condition": {Type: "string", MaxLength: ptr.To[int64](MaxInstanceConditionLength)},
			"passing":   count, "why": message,
		}, "condition"),
		"time": {Type: "string", Format: "date-time"},
	})
	return namespacedHubCRD(GraphReportKind, "graphreports", "fgrp", apiextensionsv1.CustomResourceDefinitionVersion{
		Name: GroupVersion.Version, Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type:       "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"status": status},
		}},
		AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "ASSIGNED", Type: "integer", JSONPath: ".status.assignedRevision"},
			{Name: "SERVED", Type: "integer", JSONPath: ".status.served.revision"},
			{Name: "CRD", Type: "string", JSONPath: ".status.crd.state"},
			{Name: "INSTANCES", Type: "integer", JSONPath: ".status.instances.total"},
			{Name: "READY", Type: "integer", JSONPath: ".status.instances.ready"},
			{Name: "AGE", Type: "date", JSONPath: ".status.time"},
		},
	})
}

// PullCRDs returns the CRDs of pull mode, which the hub installs when it
// serves pull clusters.
func PullCRDs() []*apiextensionsv1.CustomResourceDefinition {
	return []*apiextensionsv1.CustomResourceDefinition{PullClusterCRD(), GraphAssignmentCRD(), GraphReportCRD()}
}

// namespacedHubCRD is hubCRD, namespaced.
func namespacedHubCRD(kind, plural, short string, v apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	crd := hubCRD(kind, plural, short, v)
	crd.Spec.Scope = apiextensionsv1.NamespaceScoped
	return crd
}
