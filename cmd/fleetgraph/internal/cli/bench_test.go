package cli_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli"
	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/schemas"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// BenchmarkValidate times `fleetgraph validate` on the kro oracle's corpus
// and on the quickstart RGD, each beside its floor: loading the same files
// with v1alpha1.LoadFile and compiling them with graph.Compile against the
// same offline schemas, which is the work validate cannot avoid. The ratio
// is validate's own cost (finding files, lines, reporting).
func BenchmarkValidate(b *testing.B) {
	corpus, err := filepath.Glob("../../../../hack/krodiff/testdata/corpus/*.yaml")
	require.NoError(b, err)
	for _, c := range []struct {
		name  string
		files []string
	}{{"corpus", corpus}, {"one-rgd", []string{webapp}}} {
		b.Run(c.name+"/validate", func(b *testing.B) {
			for b.Loop() {
				cli.Main(context.Background(), "fleetgraph", append([]string{"validate"}, c.files...), cli.Streams{Out: io.Discard, ErrOut: io.Discard})
			}
		})
		b.Run(c.name+"/floor", func(b *testing.B) {
			for b.Loop() {
				res, err := schemas.Offline(nil)
				require.NoError(b, err)
				for _, f := range c.files {
					rgds, err := v1alpha1.LoadFile(f)
					if err != nil {
						continue
					}
					for _, r := range rgds {
						_, _ = graph.Compile(r, graph.Options{Resolver: res, DynamicUnknownKinds: true})
					}
				}
			}
		})
	}
}
