package instance

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ResourcesWatched names each failing kind with its error, and is absent
// when none fails (cacheopts tells which kinds fail).
func TestResourcesWatchedNamesEachFailingKind(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	assert.Nil(t, watchFailed(nil, ""))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", errors.New("no"))
	c := watchFailed(map[schema.GroupVersionKind]error{gvk: forbidden}, "")
	require.NotNil(t, c)
	assert.Equal(t, ConditionResourcesWatched, c.Type)
	assert.Equal(t, "False", c.Status)
	assert.Contains(t, c.Message, "apps/v1/Deployment")
	assert.Contains(t, c.Message, "forbidden")
}
