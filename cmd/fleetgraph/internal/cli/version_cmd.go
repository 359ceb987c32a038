package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// modulePath is the module the fleetgraph command is built from.
const modulePath = "github.com/fleetgraph/fleetgraph"

// buildInfo reads the running binary's build information; a variable so
// that tests can give their own.
var buildInfo = debug.ReadBuildInfo

func newVersionCommand(g *globals, name string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the fleetgraph module version and the commit it was built from",
		Long: `Print the version of the fleetgraph module the command was built from (as
go install records it, "(devel)" for a build in a checkout), the VCS
commit and its time, "+dirty" when the tree had uncommitted changes, and
the Go version. It reads only the binary's own build information.`,
		Example: example(name, "  fleetgraph version"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(g.streams.Out, versionLine())
			return nil
		},
	}
}

// versionLine is "fleetgraph VERSION (commit COMMIT[+dirty], TIME) GO".
func versionLine() string {
	bi, ok := buildInfo()
	if !ok {
		return "fleetgraph unknown (built without module information)"
	}
	version := bi.Main.Version
	if bi.Main.Path != modulePath {
		// Built into another module's binary: report this module's
		// version as a dependency.
		version = "unknown"
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				version = d.Version
			}
		}
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	var vcs []string
	if rev := settings["vcs.revision"]; rev != "" {
		if settings["vcs.modified"] == "true" {
			rev += "+dirty"
		}
		vcs = append(vcs, "commit "+rev)
	}
	if at := settings["vcs.time"]; at != "" {
		vcs = append(vcs, at)
	}
	line := "fleetgraph " + dashIfEmpty(version)
	if len(vcs) > 0 {
		line += " (" + strings.Join(vcs, ", ") + ")"
	}
	return line + " " + bi.GoVersion
}
