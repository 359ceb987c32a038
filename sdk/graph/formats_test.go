package graph_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

const jobTemplate = `- id: job
  template:
    apiVersion: batch/v1
    kind: Job
    metadata: {name: job}
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox}]
`

const secretTemplate = `- id: creds
  template:
    apiVersion: v1
    kind: Secret
    metadata: {name: creds}
    stringData: {user: admin}
`

func TestFormattedFieldsAreTypedAsKroTypesThem(t *testing.T) {
	typed := typedOptions(t)
	runFailCases(t, map[string]failCase{
		"bytes are not strings": {resources: "resources:\n" + secretTemplate + cm("a", "", "x: ${creds.data.user + 'x'}"), opts: typed,
			kind: graph.ErrExpression, want: `resource "a": data.x: ${creds.data.user + 'x'}: found no matching overload for '_+_' applied to '(bytes, string)'`},
		"a timestamp is not a string": {resources: "resources:\n" + jobTemplate + cm("a", "", "x: ${job.status.startTime}"), opts: typed,
			kind: graph.ErrType, want: `resource "a": data.x: ${job.status.startTime}: expression returns google.protobuf.Timestamp but the field is string`},
		"a string is not a timestamp": {resources: "resources:\n" + jobTemplate + cm("a", "", "x: ${job.status.startTime.startsWith('2')}"), opts: typed,
			kind: graph.ErrExpression, want: `found no matching overload for 'startsWith' applied to 'timestamp.(string)'`},
		"a literal number in a bytes field": {resources: "resources:\n- id: s\n  template: {apiVersion: v1, kind: Secret, metadata: {name: s}, data: {k: 3}}", opts: typed,
			kind: graph.ErrType, want: `resource "s": data.k: the number 3 does not fit a field of type bytes`},
	})
}

// kro v0.9.3 and v0.9.4 refuse a string expression in a Secret's data
// (format: byte: "returns type string but expected bytes"), however it was
// built, base64.encode included; a string belongs in stringData. The mesh
// example writes its trust bundle there: it compiles against the real
// Secret schema, as a hub with the RGD controller resolves it (#35).
func TestAStringExpressionIntoSecretDataIsRefusedAsKroDoes(t *testing.T) {
	typed := typedOptions(t)
	runFailCases(t, map[string]failCase{
		"base64.encode into data": {resources: "resources:\n- id: s\n  template: {apiVersion: v1, kind: Secret, metadata: {name: s}, data: {k: '${base64.encode(bytes(schema.spec.name))}'}}", opts: typed,
			kind: graph.ErrType, want: `resource "s": data.k: ${base64.encode(bytes(schema.spec.name))}: expression returns string but the field is bytes`},
	})

	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "mesh", "mesh.yaml"))
	require.NoError(t, err)
	g, err := graph.Compile(parseRGD(t, string(raw)), typed)
	require.NoError(t, err, "the mesh example compiles against the real Secret schema")
	require.True(t, g.IsHubGraph())

	vals := graph.Values{"schema": instance("demo", map[string]any{"east": "spoke-1", "west": "spoke-2", "port": int64(15443)})}
	vals["schema"].(map[string]any)["metadata"].(map[string]any)["uid"] = "0d6c9b7e-1111-2222-3333-444455556666"
	east, err := g.Node("eastTrust").Render(context.Background(), vals, nil)
	require.NoError(t, err)
	bundle, _, _ := unstructured.NestedString(east.Object, "stringData", "bundle")
	require.Len(t, bundle, 48)

	west, err := g.Node("westTrust").Render(context.Background(), vals, nil)
	require.NoError(t, err)
	westBundle, _, _ := unstructured.NestedString(west.Object, "stringData", "bundle")
	assert.Equal(t, bundle, westBundle, "both sides write one bundle")
}

func TestFormattedFieldsEvaluateAsTheirCELTypes(t *testing.T) {
	rgd := parseRGD(t, rgdDoc("", "resources:\n"+jobTemplate+secretTemplate+cm("a", "", `started: ${string(job.status.startTime)}
took: ${string(job.status.completionTime - job.status.startTime)}
late: ${string(job.status.completionTime > timestamp("2026-01-01T00:00:00Z"))}
done: ${string(job.status.completionTime != null)}
user: ${string(creds.data.user)}
size: ${string(size(creds.data.user))}`)))
	g, err := graph.Compile(rgd, typedOptions(t))
	require.NoError(t, err)

	vals := graph.Values{
		"schema": instance("app", map[string]any{"name": "app"}),
		"job": map[string]any{"status": map[string]any{
			"startTime": "2026-03-01T10:00:00Z", "completionTime": "2026-03-01T10:01:30Z",
		}},
		"creds": map[string]any{"data": map[string]any{"user": "YWRtaW4="}},
	}
	out, err := g.Node("a").Render(context.Background(), vals, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"started": "2026-03-01T10:00:00Z", "took": "90s", "late": "true", "done": "true",
		"user": "admin", "size": "5",
	}, out.Object["data"])
	assert.Equal(t, "2026-03-01T10:00:00Z", vals["job"].(map[string]any)["status"].(map[string]any)["startTime"],
		"evaluation never changes the observed object")
}

func TestFormattedFieldThatDoesNotParseFailsOnlyItsExpression(t *testing.T) {
	rgd := parseRGD(t, rgdDoc("", "resources:\n"+jobTemplate+cm("a", "", `started: ${string(job.status.startTime)}
name: ${job.metadata.name}`)))
	g, err := graph.Compile(rgd, typedOptions(t))
	require.NoError(t, err)

	vals := graph.Values{
		"schema": instance("app", map[string]any{"name": "app"}),
		"job":    map[string]any{"metadata": map[string]any{"name": "j"}, "status": map[string]any{"startTime": "yesterday"}},
	}
	_, err = g.Node("a").Render(context.Background(), vals, nil)
	require.ErrorIs(t, err, graph.ErrEvaluation)
	assert.Contains(t, err.Error(), `data.started: ${string(job.status.startTime)}: invalid date-time formatted string "yesterday"`)
}

func TestFormattedFieldsInReadyWhen(t *testing.T) {
	rgd := parseRGD(t, rgdDoc("", "resources:\n"+strings.Replace(jobTemplate, "  template:",
		"  readyWhen: ['${job.status.completionTime > job.status.startTime}']\n  template:", 1)))
	g, err := graph.Compile(rgd, typedOptions(t))
	require.NoError(t, err)
	vals := graph.Values{"schema": instance("app", map[string]any{"name": "app"})}
	ready, err := g.Node("job").Ready(context.Background(), vals, map[string]any{"status": map[string]any{
		"startTime": "2026-03-01T10:00:00Z", "completionTime": "2026-03-01T10:01:30Z",
	}})
	require.NoError(t, err)
	assert.True(t, ready)
}

func TestFormattedIteratorItemsKeepTheirType(t *testing.T) {
	rgd := parseRGD(t, rgdDoc("", "resources:\n"+jobTemplate+`- id: stamps
  forEach:
    - at: ${[job.status.startTime, job.status.completionTime]}
  template:
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: ${'stamp-' + string(at.getSeconds())}
    data:
      at: ${string(at)}
`))
	g, err := graph.Compile(rgd, typedOptions(t))
	require.NoError(t, err)
	vals := graph.Values{
		"schema": instance("app", map[string]any{"name": "app"}),
		"job": map[string]any{"status": map[string]any{
			"startTime": "2026-03-01T10:00:07Z", "completionTime": "2026-03-01T10:01:30Z",
		}},
	}
	node := g.Node("stamps")
	iterations, err := node.Iterations(context.Background(), vals)
	require.NoError(t, err)
	require.Len(t, iterations, 2)
	var names []string
	for _, it := range iterations {
		out, err := node.Render(context.Background(), vals, it)
		require.NoError(t, err)
		names = append(names, out.GetName())
	}
	assert.Equal(t, []string{"stamp-7", "stamp-30"}, names)
}
