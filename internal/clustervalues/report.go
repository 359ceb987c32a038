package clustervalues

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// Report is what one accepted object does on the clusters looked at.
type Report struct {
	// Clusters is how many clusters its selector matches.
	Clusters int32
	// Conflicts are the keys a later object of the same rank sets to
	// another value, by key and winner, in that order.
	Conflicts []Conflict
}

// Conflict is one key of an object that another object overrides.
type Conflict struct {
	Key, Winner string
	// Clusters counts the clusters where it does; Names lists the first
	// maxNames of them, in name order.
	Clusters int
	Names    []string
}

// maxNames bounds the clusters a Conflict names, and maxConflicts the
// conflicts a message lists, so a status stays small on any fleet.
const (
	maxNames     = 3
	maxConflicts = 5
)

// Message says what the conflicts are, briefly.
func (r *Report) Message() string {
	var parts []string
	for i, c := range r.Conflicts {
		if i == maxConflicts {
			parts = append(parts, fmt.Sprintf("and %d more", len(r.Conflicts)-maxConflicts))
			break
		}
		more := ""
		if c.Clusters > len(c.Names) {
			more = fmt.Sprintf(" and %d more", c.Clusters-len(c.Names))
		}
		parts = append(parts, fmt.Sprintf("key %q is overridden by %q on cluster %s%s", c.Key, c.Winner, quoted(c.Names), more))
	}
	return strings.Join(parts, "; ")
}

// Report looks at each accepted object on the given clusters (their
// labels, by name): how many it matches, and where a later object of the
// same rank overrides one of its keys with another value. Objects for
// every graph are one rank, and the objects of each graph one rank each:
// a graph's own values overriding the defaults for every graph is the
// point, not a conflict.
func (s *Store) Report(clusters map[string]map[string]string) map[string]*Report {
	s.mu.RLock()
	objs := s.objs
	s.mu.RUnlock()
	out := make(map[string]*Report, len(objs))
	for _, o := range objs {
		out[o.name] = &Report{}
	}
	names := make([]string, 0, len(clusters))
	for name := range clusters {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, cluster := range names {
		set := labels.Set(clusters[cluster])
		ranks := map[string]map[string]*object{} // per rank, the owner of each key
		for _, o := range objs {
			if !o.selector.Matches(set) {
				continue
			}
			out[o.name].Clusters++
			owners := ranks[o.graph]
			if owners == nil {
				owners = map[string]*object{}
				ranks[o.graph] = owners
			}
			for _, k := range sortedKeys(o.values) {
				if prev := owners[k]; prev != nil && !reflect.DeepEqual(prev.values[k], o.values[k]) {
					out[prev.name].add(k, o.name, cluster)
				}
				owners[k] = o
			}
		}
	}
	for _, r := range out {
		slices.SortFunc(r.Conflicts, func(a, b Conflict) int {
			return strings.Compare(a.Key+"\x00"+a.Winner, b.Key+"\x00"+b.Winner)
		})
	}
	return out
}

func (r *Report) add(key, winner, cluster string) {
	for i := range r.Conflicts {
		c := &r.Conflicts[i]
		if c.Key == key && c.Winner == winner {
			c.Clusters++
			if len(c.Names) < maxNames {
				c.Names = append(c.Names, cluster)
			}
			return
		}
	}
	r.Conflicts = append(r.Conflicts, Conflict{Key: key, Winner: winner, Clusters: 1, Names: []string{cluster}})
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
