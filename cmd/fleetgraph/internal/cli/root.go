package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes, for scripts and CI.
const (
	// ExitOK: the command did what was asked, and what it checked is fine.
	ExitOK = 0
	// ExitFailed: what the command checked is not fine (an RGD is
	// invalid, a rollout failed).
	ExitFailed = 1
	// ExitError: the command could not run (a bad flag, an unreadable
	// file, a cluster that does not answer).
	ExitError = 2
)

// Streams are the command's standard input, output and error.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// exitError ends the command with an exit code other than ExitError.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// failed ends a command with ExitFailed; msg goes to standard error unless
// it is empty (the command already said why).
func failed(format string, args ...any) error {
	return &exitError{code: ExitFailed, err: fmt.Errorf(format, args...)}
}

// Main runs the command named by argv0 (its path: the base name decides
// whether it presents itself as a kubectl plugin) with args until it ends
// or ctx does (--watch runs until then), and returns the exit code.
func Main(ctx context.Context, argv0 string, args []string, s Streams) int {
	if s.Out == nil {
		s.Out = os.Stdout
	}
	if s.ErrOut == nil {
		s.ErrOut = os.Stderr
	}
	out, errOut := newSafeWriter(s.Out), newSafeWriter(s.ErrOut)
	defer func() { _, _ = out.Flush(), errOut.Flush() }()
	s.Out, s.ErrOut = out, errOut
	cmd := NewCommand(CommandName(argv0), s)
	if isCompleter(argv0) {
		// kubectl (1.26 and later) completes `kubectl fleetgraph ...` by
		// running kubectl_complete-fleetgraph with the words after the
		// plugin's name: cobra's hidden __complete command answers.
		args = append([]string{cobra.ShellCompRequestCmd}, args...)
	}
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if msg := ee.err.Error(); msg != "" {
			fmt.Fprintln(s.ErrOut, "error:", msg)
		}
		return ee.code
	}
	fmt.Fprintln(s.ErrOut, "error:", err)
	return ExitError
}

// The names kubectl looks for on PATH: the plugin, and its completion.
const (
	PluginName    = "kubectl-fleetgraph"
	CompleterName = "kubectl_complete-fleetgraph"
)

// CommandName is how the command presents itself: "kubectl fleetgraph"
// when its file is named PluginName (kubectl runs plugins by that name)
// or CompleterName, else "fleetgraph".
func CommandName(argv0 string) string {
	switch base(argv0) {
	case PluginName, CompleterName:
		return "kubectl fleetgraph"
	}
	return "fleetgraph"
}

// isCompleter reports whether the command runs as CompleterName.
func isCompleter(argv0 string) bool { return base(argv0) == CompleterName }

// base is the file name of argv0 without directory or extension (.exe).
func base(argv0 string) string {
	return strings.TrimSuffix(filepath.Base(argv0), filepath.Ext(argv0))
}

// NewCommand returns the root command, presented as name.
func NewCommand(name string, s Streams) *cobra.Command {
	g := &globals{streams: s}
	root := &cobra.Command{
		Use:   "fleetgraph",
		Short: "Check, draw and operate fleetgraph resource graphs",
		Long: `fleetgraph checks ResourceGraphDefinitions with the hub's own compiler,
without a cluster (validate, generate, diagram), and shows and steers a
fleet from the hub cluster (status, rollout).

status and rollout reach the hub cluster with kubectl's flags (--kubeconfig,
--context, -n, --user; "options" lists them all), but for one: the
kubeconfig's cluster entry is --kubeconfig-cluster, since --cluster always
names a cluster of the fleet. The offline commands take only --kubeconfig
and --context, for --schemas-from cluster.

Exit codes: 0 success; 1 what was checked is not fine (an invalid RGD, a
failed rollout, a refused request); 2 the command could not run.`,
		Example: strings.ReplaceAll(`  fleetgraph validate rgds/
  fleetgraph diagram webapp.yaml -o mermaid
  fleetgraph status webapp --watch
  fleetgraph rollout pause webapp`, "fleetgraph", name),
		SilenceUsage:  true,
		SilenceErrors: true,
		CompletionOptions: cobra.CompletionOptions{
			HiddenDefaultCmd: false,
		},
	}
	if name != "fleetgraph" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	online := []*cobra.Command{newStatusCommand(g, name), newRolloutCommand(g, name)}
	for _, cmd := range online {
		g.bindConnection(cmd) // kube.go; offline commands bind what they use
	}
	root.AddCommand(online...)
	root.AddCommand(
		newValidateCommand(g, name),
		newGenerateCommand(g, name),
		newDiagramCommand(g, name),
		newVersionCommand(g, name), // version_cmd.go
	)
	root.AddCommand(newOptionsCommand(name))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: ExitError, err: err}
	})
	return root
}

// example renders an Example block for the command presented as name.
func example(name, text string) string {
	return strings.ReplaceAll(text, "fleetgraph ", name+" ")
}
