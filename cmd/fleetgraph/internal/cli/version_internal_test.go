package cli

import (
	"bytes"
	"context"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// version prints the module version and the commit from the build
// information, as go install and go build record them.
func TestVersionReadsTheBuildInformation(t *testing.T) {
	t.Cleanup(func() { buildInfo = debug.ReadBuildInfo })
	for _, c := range []struct {
		info *debug.BuildInfo
		want string
	}{
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "v0.3.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4cacc02b061d7ed0fbc2a6b4a3b186514398f77e"}, {Key: "vcs.time", Value: "2026-12-06T10:00:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, "fleetgraph v0.3.0 (commit 4cacc02b061d7ed0fbc2a6b4a3b186514398f77e, 2026-12-06T10:00:00Z) go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"},
		}}, "fleetgraph (devel) (commit abc+dirty) go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/platform", Version: "v1.0.0"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.2.1"}}}, "fleetgraph v0.2.1 go1.26.8"},
	} {
		buildInfo = func() (*debug.BuildInfo, bool) { return c.info, true }
		var out bytes.Buffer
		code := Main(context.Background(), "fleetgraph", []string{"version"}, Streams{Out: &out, ErrOut: &out})
		assert.Equal(t, ExitOK, code)
		assert.Equal(t, c.want+"\n", out.String())
	}
}
