package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// Where kro's single-cluster operations go in the fleet. These are the
// adaptations docs/reference/kro-differences.md lists, each with its
// reason; everything else in kro's cases runs as written.
const (
	// hubCluster is the chainsaw cluster name of the hub: RGDs live there.
	hubCluster = "hub"
	// rgdAPIVersion and rgdKind name what goes to the hub.
	rgdAPIVersion = "kro.run/v1alpha1"
	rgdKind       = "ResourceGraphDefinition"
	// crdKind is what every spoke needs: a CRD a case installs by hand
	// (kro's cluster has one place for it; a fleet serves a child kind
	// only where its CRD is), and a generated CRD a case asserts (the hub
	// fans it out to every spoke, so the assertion holds on each).
	crdAPIVersion = "apiextensions.k8s.io/v1"
	crdKind       = "CustomResourceDefinition"
)

// operationKinds are the chainsaw operations that touch resources, in
// the order chainsaw documents them.
var operationKinds = []string{"apply", "assert", "create", "delete", "error", "patch", "update", "wait"}

// adapt rewrites one kro chainsaw Test (test, the file's bytes, read from
// caseDir) for a fleet whose default chainsaw cluster is the first spoke:
// an operation on an RGD gets cluster: hub; an operation on a CRD runs on
// the default spoke and again on each of otherSpokes; catch blocks that
// collect kro's controller pod logs are dropped (there is no kro pod: the
// hub runs in the harness process and logs to a file). It returns the
// adapted Test and one line per change it made.
func adapt(test []byte, caseDir string, otherSpokes []string) ([]byte, []string, error) {
	var doc map[string]any
	if err := sigsyaml.Unmarshal(test, &doc); err != nil {
		return nil, nil, fmt.Errorf("reading the test: %w", err)
	}
	spec, _ := doc["spec"].(map[string]any)
	steps, _ := spec["steps"].([]any)
	var changes []string
	for _, s := range steps {
		step, _ := s.(map[string]any)
		name, _ := step["name"].(string)
		for _, block := range []string{"try", "catch", "finally", "cleanup"} {
			ops, ok := step[block].([]any)
			if !ok {
				continue
			}
			adapted, notes, err := adaptOperations(ops, caseDir, otherSpokes)
			if err != nil {
				return nil, nil, fmt.Errorf("step %q %s: %w", name, block, err)
			}
			for _, n := range notes {
				changes = append(changes, fmt.Sprintf("step %q %s: %s", name, block, n))
			}
			if len(adapted) == 0 {
				delete(step, block)
			} else {
				step[block] = adapted
			}
		}
	}
	out, err := sigsyaml.Marshal(doc)
	return out, changes, err
}

func adaptOperations(ops []any, caseDir string, otherSpokes []string) ([]any, []string, error) {
	var out []any
	var notes []string
	for _, o := range ops {
		op, _ := o.(map[string]any)
		if _, ok := op["podLogs"]; ok {
			notes = append(notes, "dropped podLogs (kro's controller pod)")
			continue
		}
		kind, body := operation(op)
		if body == nil {
			out = append(out, op)
			continue
		}
		targets, err := targetKinds(body, caseDir)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", kind, err)
		}
		switch {
		case all(targets, rgdAPIVersion, rgdKind):
			body["cluster"] = hubCluster // chainsaw reads it inside the action
			out = append(out, op)
			notes = append(notes, fmt.Sprintf("%s %s on the hub", kind, describe(body)))
		case all(targets, crdAPIVersion, crdKind):
			out = append(out, op)
			for _, spoke := range otherSpokes {
				again := deepCopy(op)
				_, againBody := operation(again)
				againBody["cluster"] = spoke
				out = append(out, again)
				notes = append(notes, fmt.Sprintf("%s %s also on %s", kind, describe(body), spoke))
			}
		case some(targets, rgdAPIVersion, rgdKind) || some(targets, crdAPIVersion, crdKind):
			return nil, nil, fmt.Errorf("%s mixes RGDs or CRDs with other kinds: no single cluster holds them", describe(body))
		default:
			out = append(out, op)
		}
	}
	return out, notes, nil
}

// operation returns the name and body of the resource operation op holds,
// or a nil body for one that touches no resource (sleep, script, ...).
func operation(op map[string]any) (string, map[string]any) {
	for _, k := range operationKinds {
		if body, ok := op[k].(map[string]any); ok {
			return k, body
		}
	}
	return "", nil
}

type typeRef struct{ apiVersion, kind string }

// targetKinds returns the kinds an operation's body touches: those of its
// file's documents, of its inline resource, or of its ref (delete) or
// object type (wait).
func targetKinds(body map[string]any, caseDir string) ([]typeRef, error) {
	if file, ok := body["file"].(string); ok {
		return fileKinds(filepath.Join(caseDir, file))
	}
	for _, key := range []string{"resource", "ref"} {
		if r, ok := body[key].(map[string]any); ok {
			return []typeRef{refOf(r)}, nil
		}
	}
	if _, ok := body["kind"]; ok {
		return []typeRef{refOf(body)}, nil
	}
	return nil, errors.New("names no file, resource, ref or kind")
}

func refOf(m map[string]any) typeRef {
	v, _ := m["apiVersion"].(string)
	k, _ := m["kind"].(string)
	return typeRef{v, k}
}

func fileKinds(path string) ([]typeRef, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var refs []typeRef
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return refs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		if m != nil {
			refs = append(refs, refOf(m))
		}
	}
}

func all(refs []typeRef, apiVersion, kind string) bool {
	for _, r := range refs {
		if r.apiVersion != apiVersion || r.kind != kind {
			return false
		}
	}
	return len(refs) > 0
}

func some(refs []typeRef, apiVersion, kind string) bool {
	for _, r := range refs {
		if r.apiVersion == apiVersion && r.kind == kind {
			return true
		}
	}
	return false
}

func describe(body map[string]any) string {
	if file, ok := body["file"].(string); ok {
		return file
	}
	for _, key := range []string{"resource", "ref"} {
		if r, ok := body[key].(map[string]any); ok {
			return fmt.Sprintf("%v %v", r["kind"], r["name"])
		}
	}
	return fmt.Sprintf("%v %v", body["kind"], body["name"])
}

func deepCopy(m map[string]any) map[string]any {
	data, _ := sigsyaml.Marshal(m)
	var out map[string]any
	_ = sigsyaml.Unmarshal(data, &out)
	return out
}

// kroFinalizer and fleetgraphFinalizer are the finalizer each puts on the
// RGDs and instances it manages: fleetgraph keeps its bookkeeping under its
// own domain, a listed difference (docs/reference/kro-differences.md).
const (
	kroFinalizer        = "kro.run/finalizer"
	fleetgraphFinalizer = "fleetgraph.dev/finalizer"
)

// kroLabels maps the labels kro puts on the objects it manages to
// fleetgraph's: on a child, kro's owned label is fleetgraph's managed-by
// label and its instance-name label is fleetgraph's; on an instance,
// fleetgraph puts none (kro's owned and RGD-name labels have no
// counterpart), so they are not asserted there.
var kroLabels = map[string]struct{ child, value string }{
	"kro.run/owned":                          {child: "app.kubernetes.io/managed-by", value: "fleetgraph"},
	"kro.run/instance-name":                  {child: "fleetgraph.dev/instance-name"},
	"kro.run/resource-graph-definition-name": {child: "fleetgraph.dev/graph"},
}

// adaptBookkeeping returns the file named name with kro's bookkeeping
// (finalizer and labels) read as fleetgraph's, and notes saying what
// changed, or none when it names none of it. A file that is not YAML
// objects is left alone.
func adaptBookkeeping(name string, data []byte) ([]byte, []string) {
	if !bytes.Contains(data, []byte("kro.run/")) || !bytes.Contains(data, []byte("metadata")) {
		return data, nil
	}
	var notes []string
	var out [][]byte
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var obj map[string]any
		if err := sigsyaml.Unmarshal(doc, &obj); err != nil || obj == nil {
			return data, nil
		}
		notes = append(notes, adaptObject(name, obj)...)
		b, err := sigsyaml.Marshal(obj)
		if err != nil {
			return data, nil
		}
		out = append(out, b)
	}
	if len(notes) == 0 {
		return data, nil
	}
	return bytes.Join(out, []byte("---\n")), notes
}

// adaptObject reads kro's finalizer and labels on obj as fleetgraph's.
func adaptObject(file string, obj map[string]any) []string {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return nil
	}
	var notes []string
	if fins, ok := md["finalizers"].([]any); ok {
		for i, f := range fins {
			if f == kroFinalizer {
				fins[i] = fleetgraphFinalizer
				notes = append(notes, fmt.Sprintf("%s: %s read as %s", file, kroFinalizer, fleetgraphFinalizer))
			}
		}
	}
	labels, _ := md["labels"].(map[string]any)
	instance := obj["apiVersion"] == rgdAPIVersion && obj["kind"] != rgdKind
	for k, v := range labels {
		to, ok := kroLabels[k]
		if !ok {
			continue
		}
		delete(labels, k)
		if instance {
			notes = append(notes, fmt.Sprintf("%s: label %s not asserted on an instance (fleetgraph labels none)", file, k))
			continue
		}
		if to.value != "" {
			v = to.value
		}
		labels[to.child] = v
		notes = append(notes, fmt.Sprintf("%s: label %s read as %s", file, k, to.child))
	}
	if labels != nil && len(labels) == 0 {
		delete(md, "labels")
	}
	return notes
}
