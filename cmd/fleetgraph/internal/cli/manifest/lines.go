package manifest

import (
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// LineOf returns the line of the file that a compiler error points at: the
// field path inside the named resource (in its template, or in the
// resource entry for paths such as readyWhen[0] or
// externalRef.metadata.name) or, without a resource id, from the top of
// the document (spec.schema.spec.port). Where the path leads past what the
// YAML holds (a SimpleSchema marker inside a string), it is the line of the
// deepest part that exists.
func (d *Document) LineOf(resourceID, path string) int {
	if d.root == nil {
		return d.Line
	}
	if resourceID == "" {
		_, n, _ := walk(d.root, path)
		return d.offset(n)
	}
	res := d.resource(resourceID)
	if res == nil {
		return d.offset(d.root)
	}
	best, depth := res, 0
	if tmpl, _ := field(res, "template"); tmpl != nil {
		if _, n, k := walk(tmpl, path); k > 0 {
			best, depth = n, k
		}
	}
	if _, n, k := walk(res, path); k > depth {
		best = n
	}
	return d.offset(best)
}

// offset turns a line of the document into a line of the file.
func (d *Document) offset(n *yamlv3.Node) int { return n.Line + d.Line - 1 }

// ResourceID is the id of the index-th entry of spec.resources, or "".
func (d *Document) ResourceID(index int) string {
	if d.root == nil {
		return ""
	}
	list, _, k := walk(d.root, "spec.resources")
	if k != 2 || list.Kind != yamlv3.SequenceNode || index < 0 || index >= len(list.Content) {
		return ""
	}
	if v, _ := field(list.Content[index], "id"); v != nil && v.Kind == yamlv3.ScalarNode {
		return v.Value
	}
	return ""
}

// resource returns the spec.resources entry with the given id.
func (d *Document) resource(id string) *yamlv3.Node {
	list, _, k := walk(d.root, "spec.resources")
	if k != 2 || list.Kind != yamlv3.SequenceNode {
		return nil
	}
	for _, item := range list.Content {
		if v, _ := field(item, "id"); v != nil && v.Value == id {
			return item
		}
	}
	return nil
}

// walk follows path (dots and [i]) down from n and returns the deepest
// node it reached, the node whose line is that field's (the key of a
// mapping field) and how many parts of the path it followed.
func walk(n *yamlv3.Node, path string) (*yamlv3.Node, *yamlv3.Node, int) {
	cur, at, depth := n, n, 0
	for _, part := range parts(path) {
		var next, key *yamlv3.Node
		if i, err := strconv.Atoi(part); err == nil && cur.Kind == yamlv3.SequenceNode {
			if i >= 0 && i < len(cur.Content) {
				next, key = cur.Content[i], cur.Content[i]
			}
		} else {
			next, key = field(cur, part)
		}
		if next == nil {
			break
		}
		cur, at = next, key
		depth++
	}
	return cur, at, depth
}

// field returns the value of key in mapping n and the key's node.
func field(n *yamlv3.Node, key string) (*yamlv3.Node, *yamlv3.Node) {
	if n.Kind != yamlv3.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], n.Content[i]
		}
	}
	return nil, nil
}

// parts turns spec.resources[1].id into spec, resources, 1, id.
func parts(path string) []string {
	path = strings.NewReplacer("[", ".", "]", "").Replace(path)
	var out []string
	for _, p := range strings.Split(path, ".") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
