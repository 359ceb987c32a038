package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	kro "github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// The agent keeps, in its own cluster, one ConfigMap per graph it serves:
// the assignment it acts on and the revision the cluster served last. It
// writes the assignment before acting on it, so that what it serves
// after a restart is what it served before, whether or not the hub
// answers.

// LabelAgentState marks the agent's state ConfigMaps.
const LabelAgentState = "fleetgraph.dev/agent-state"

// stateKey is the ConfigMap's key holding the record, as JSON.
const stateKey = "state"

// stateRecord is what the agent keeps of one graph.
type stateRecord struct {
	Graph string `json:"graph"`
	// Generation and Assignment are the assignment acted on.
	Generation int64                          `json:"generation"`
	Assignment fgv1alpha1.GraphAssignmentSpec `json:"assignment"`
	// Served is the revision serving the cluster last time the agent
	// looked; nil before one did.
	Served *servedRecord `json:"served,omitempty"`
}

// servedRecord is a revision that served the cluster.
type servedRecord struct {
	Revision int64                                      `json:"revision"`
	Snapshot fgv1alpha1.ResourceGraphDefinitionSnapshot `json:"snapshot"`
}

// stateStore reads and writes the records.
type stateStore struct {
	client       client.Client
	namespace    string
	fieldManager string
}

// configMapName names the ConfigMap of a graph: "fga-<graph>", or a hash
// of the graph's name when that is too long.
func configMapName(graphName string) string {
	name := "fga-" + graphName
	if len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(graphName))
	return "fga-" + hex.EncodeToString(sum[:16])
}

// ensureNamespace creates the state namespace if it is missing.
func (s *stateStore) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace}}
	if err := s.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the agent's namespace %s: %w", s.namespace, err)
	}
	return nil
}

// load reads every record.
func (s *stateStore) load(ctx context.Context) ([]stateRecord, error) {
	list := &corev1.ConfigMapList{}
	if err := s.client.List(ctx, list, client.InNamespace(s.namespace), client.MatchingLabels{LabelAgentState: "true"}); err != nil {
		return nil, fmt.Errorf("reading the agent's state: %w", err)
	}
	out := make([]stateRecord, 0, len(list.Items))
	for _, cm := range list.Items {
		var rec stateRecord
		if err := json.Unmarshal([]byte(cm.Data[stateKey]), &rec); err != nil || rec.Graph == "" {
			return nil, fmt.Errorf("the agent's state ConfigMap %s/%s does not decode: %v", cm.Namespace, cm.Name, err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// save writes rec.
func (s *stateStore) save(ctx context.Context, rec stateRecord) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding the state of graph %s: %w", rec.Graph, err)
	}
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: configMapName(rec.Graph), Labels: map[string]string{
			LabelAgentState: "true", kro.LabelManagedBy: kro.ManagedByFleetgraph,
		}},
		Data: map[string]string{stateKey: string(raw)},
	}
	u, err := toApply(cm)
	if err != nil {
		return err
	}
	if err := s.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(s.fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("keeping the state of graph %s: %w", rec.Graph, err)
	}
	return nil
}

// delete forgets a graph's record.
func (s *stateStore) delete(ctx context.Context, graphName string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: configMapName(graphName)}}
	if err := s.client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("forgetting the state of graph %s: %w", graphName, err)
	}
	return nil
}
