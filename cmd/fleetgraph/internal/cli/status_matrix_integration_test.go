//go:build integration

package cli_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli"
)

// statusPictures draws, from the hub, the fleet matrix the terminal shows
// as DOT and as SVG (drawn by the command, well-formed), with both spokes
// as columns; --watch refuses a picture. It runs once the quickstart graph
// serves both spokes.
func statusPictures(t *testing.T) {
	r := hub(t, "status", "-o", "svg")
	require.Equal(t, cli.ExitOK, r.code, r.String())
	assert.Contains(t, r.out, `<svg xmlns="http://www.w3.org/2000/svg"`)
	for _, want := range []string{">webapp</text>", ">spoke-1</text>", ">spoke-2</text>", ">True</text>"} {
		assert.Contains(t, r.out, want)
	}
	d := xml.NewDecoder(bytes.NewReader([]byte(r.out)))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "well-formed SVG:\n%s", r.out)
	}

	r = hub(t, "status", "-o", "dot")
	require.Equal(t, cli.ExitOK, r.code, r.String())
	assert.Contains(t, r.out, "digraph fleet {")
	assert.Contains(t, r.out, "<TD><B>spoke-1</B></TD><TD><B>spoke-2</B></TD>")

	r = hub(t, "status", "-o", "svg", "--watch")
	assert.Equal(t, cli.ExitError, r.code, r.String())
	assert.Contains(t, r.err, "--watch redraws text: -o svg draws one picture")
}
