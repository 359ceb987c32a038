package docs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/providers/capi"
	"github.com/fleetgraph/fleetgraph/providers/clusterprofile"
	"github.com/fleetgraph/fleetgraph/providers/kcp"
	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/sdk/graph/resolver"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// Every exported field of the public option structs is listed, as `Field`,
// in its section of the reference (the section whose heading names the
// type), so that a new option cannot go undocumented and a removed one
// cannot stay documented. An option struct nested in a listed one (a
// concern of sdk.Options, say) must have a section of its own.
func TestEveryOptionIsListed(t *testing.T) {
	cases := []struct {
		page, section string
		value         any
	}{
		{"reference/options.md", "sdk.Options", sdk.Options{}},
		{"reference/options.md", "sdk.RGDOptions", sdk.RGDOptions{}},
		{"reference/options.md", "sdk.CompileOptions", sdk.CompileOptions{}},
		{"reference/options.md", "sdk.CRDOptions", sdk.CRDOptions{}},
		{"reference/options.md", "sdk.FleetOptions", sdk.FleetOptions{}},
		{"reference/options.md", "sdk.RolloutOptions", sdk.RolloutOptions{}},
		{"reference/options.md", "sdk.PlacementDecisionOptions", sdk.PlacementDecisionOptions{}},
		{"reference/options.md", "sdk.ReplicaOptions", sdk.ReplicaOptions{}},
		{"reference/options.md", "sdk.PullOptions", sdk.PullOptions{}},
		{"reference/options.md", "sdk.TargetOptions", sdk.TargetOptions{}},
		{"reference/options.md", "sdk.ShardingOptions", sdk.ShardingOptions{}},
		{"reference/options.md", "hub.ProberOptions", hub.ProberOptions{}},
		{"reference/options.md", "hub.Options", hub.Options{}},
		{"reference/options.md", "spoke.Options", spoke.Options{}},
		{"reference/options.md", "graph.Options", graph.Options{}},
		{"reference/options.md", "resolver.Options", resolver.Options{}},
		{"reference/options.md", "secret.Options", secret.Options{}},
		{"reference/options.md", "secret.Safety", secret.Safety{}},
		{"reference/options.md", "clusterprofile.Options", clusterprofile.Options{}},
		{"reference/options.md", "clusterprofile.CredentialPlugin", clusterprofile.CredentialPlugin{}},
		{"reference/options.md", "capi.Options", capi.Options{}},
		{"reference/options.md", "kcp.Options", kcp.Options{}},
		{"reference/options.md", "kcp.APIExportOptions", kcp.APIExportOptions{}},
		{"reference/limits.md", "graph.Limits", graph.Limits{}},
	}
	sectioned := map[reflect.Type]bool{}
	for _, c := range cases {
		sectioned[reflect.TypeOf(c.value)] = true
	}
	for _, c := range cases {
		text := section(t, c.page, c.section)
		listed := map[string]bool{}
		typ := reflect.TypeOf(c.value)
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			listed[f.Name] = true
			assert.Contains(t, text, "`"+f.Name+"`", "%s: %s.%s is not listed", c.page, c.section, f.Name)
			if nestedOptions(f.Type) {
				assert.True(t, sectioned[f.Type], "%s.%s: its type %s has no section listing its fields", c.section, f.Name, f.Type)
			}
		}
		require.NotEmpty(t, listed, c.section)
	}
}

// nestedOptions says whether t is one of the module's option structs, whose
// fields a reader looks up in a section of their own.
func nestedOptions(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && strings.HasPrefix(t.PkgPath(), "github.com/fleetgraph/fleetgraph/") &&
		(strings.HasSuffix(t.Name(), "Options") || t.Name() == "Limits")
}

// section returns the text under the heading of page that is exactly
// title, up to the next heading of the same or a higher level.
func section(t *testing.T, file, title string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", filepath.FromSlash(file)))
	require.NoError(t, err)
	var out []string
	level := 0
	for _, l := range strings.Split(string(raw), "\n") {
		m := heading.FindStringSubmatch(l)
		switch {
		case m != nil && level == 0 && strings.Trim(m[2], "`") == title:
			level = len(m[1])
		case m != nil && level > 0 && len(m[1]) <= level:
			return strings.Join(out, "\n")
		case level > 0:
			out = append(out, l)
		}
	}
	require.NotZero(t, level, "%s has no heading %q", file, title)
	return strings.Join(out, "\n")
}
