package krodiff

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// jsonDiff lists where two JSON values differ, one line per differing path
// ("spec.versions[0].schema...: kro <a>, fleetgraph <b>"); a value missing
// on one side shows as "absent". It is empty when they are equal.
func jsonDiff(kro, fg any) []string {
	var lines []string
	walkDiff("", kro, fg, &lines)
	return lines
}

func walkDiff(path string, a, b any, lines *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		for _, k := range unionKeys(am, bm) {
			av, ain := am[k]
			bv, bin := bm[k]
			p := joinPath(path, k)
			switch {
			case !ain:
				*lines = append(*lines, fmt.Sprintf("%s: kro absent, fleetgraph %s", p, render(bv)))
			case !bin:
				*lines = append(*lines, fmt.Sprintf("%s: kro %s, fleetgraph absent", p, render(av)))
			default:
				walkDiff(p, av, bv, lines)
			}
		}
		return
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		for i := range as {
			walkDiff(fmt.Sprintf("%s[%d]", path, i), as[i], bs[i], lines)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*lines = append(*lines, fmt.Sprintf("%s: kro %s, fleetgraph %s", path, render(a), render(b)))
	}
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func render(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(raw) > 300 {
		return string(raw[:300]) + "..."
	}
	return string(raw)
}
