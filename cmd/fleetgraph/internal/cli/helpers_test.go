package cli_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// result is what one run of the command printed, and its exit code.
type result struct {
	out, err string
	code     int
}

// String is the run as a golden file holds it.
func (r result) String() string {
	return fmt.Sprintf("exit code: %d\n--- stdout\n%s--- stderr\n%s", r.code, r.out, r.err)
}

// run runs the command in-process, as argv0 would, with args.
func run(t *testing.T, argv0 string, stdin string, args ...string) result {
	t.Helper()
	return runContext(t, context.Background(), argv0, stdin, args...)
}

func runContext(t *testing.T, ctx context.Context, argv0 string, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(ctx, argv0, args, cli.Streams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	return result{out: out.String(), err: errOut.String(), code: code}
}

// fleetgraph runs the command as "fleetgraph".
func fleetgraph(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, "fleetgraph", "", args...)
}

// golden compares got with testdata/<name>.golden, or writes it with
// -update.
// eventuallyGolden runs cmd until its output matches the golden file, for
// output read from a hub whose published state settles a moment after the
// condition the test waited for (a replica record renewed after the RGD's
// status, say). It fails with the last difference when the deadline passes.
func eventuallyGolden(t *testing.T, name string, timeout time.Duration, cmd func() string) {
	t.Helper()
	if *update {
		golden(t, name, cmd())
		return
	}
	want, err := os.ReadFile(filepath.Join("testdata", name+".golden"))
	require.NoError(t, err, "no golden file: run the test with -update")
	var got string
	deadline := time.Now().Add(timeout)
	for got = cmd(); got != string(want) && time.Now().Before(deadline); got = cmd() {
		time.Sleep(200 * time.Millisecond) // poll interval, not synchronisation: the loop ends on a match
	}
	golden(t, name, got)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run the test with -update")
	require.Equal(t, string(want), got, "output differs from %s (rerun with -update if the change is intended)", path)
}
