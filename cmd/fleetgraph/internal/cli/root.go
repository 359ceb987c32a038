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
	cmd := NewCommand(CommandName(argv0), s)
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

// CommandName is how the command presents itself: "kubectl fleetgraph"
// when its file is named kubectl-fleetgraph (kubectl runs plugins by that
// name), else "fleetgraph".
func CommandName(argv0 string) string {
	base := strings.TrimSuffix(filepath.Base(argv0), filepath.Ext(argv0))
	if base == "kubectl-fleetgraph" {
		return "kubectl fleetgraph"
	}
	return "fleetgraph"
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

Exit codes: 0 success; 1 what was checked is not fine (an invalid RGD, a
failed rollout); 2 the command could not run.`,
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
	g.bindFlags(root)
	root.AddCommand(
		newValidateCommand(g, name),
		newGenerateCommand(g, name),
		newDiagramCommand(g, name),
		newStatusCommand(g, name),
		newRolloutCommand(g, name),
	)
	root.AddCommand(newOptionsCommand(root, name))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: ExitError, err: err}
	})
	return root
}

// example renders an Example block for the command presented as name.
func example(name, text string) string {
	return strings.ReplaceAll(text, "fleetgraph ", name+" ")
}

// readAll reads the command's standard input (os.Stdin when Streams.In is
// nil), for "-" arguments.
func readAll(r io.Reader) ([]byte, error) {
	if r == nil {
		r = os.Stdin
	}
	return io.ReadAll(r)
}
