package testing

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// Printed returns the row `kubectl get` prints for the object name of
// resource gvr (namespace "" for a cluster-scoped one): each column's cell
// by the column's name, as the API server's Table form gives it (a string,
// a number as float64, or nil when its JSONPath finds nothing). It is how
// a test checks what a user reads in a CRD's printer columns.
func (c *Cluster) Printed(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (map[string]any, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", c.Name, err)
	}
	path := []string{"/apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		path = []string{"/api", gvr.Version}
	}
	if namespace != "" {
		path = append(path, "namespaces", namespace)
	}
	path = append(path, gvr.Resource, name)
	raw, err := cs.RESTClient().Get().AbsPath(path...).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading %s %s as a table: %w", gvr.Resource, name, err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(raw, table); err != nil {
		return nil, fmt.Errorf("decoding %s %s's table: %w", gvr.Resource, name, err)
	}
	if len(table.Rows) != 1 {
		return nil, fmt.Errorf("%s %s: %d rows in its table", gvr.Resource, name, len(table.Rows))
	}
	row := map[string]any{}
	for i, col := range table.ColumnDefinitions {
		if i < len(table.Rows[0].Cells) {
			row[col.Name] = table.Rows[0].Cells[i]
		}
	}
	return row, nil
}
