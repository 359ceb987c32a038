package sdk

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A probe refused because its namespace is missing reached a server that
// serves the kind; a kind the server does not serve is another NotFound.
func TestAMissingNamespaceStillProvesTheKindServed(t *testing.T) {
	assert.True(t, noNamespace(apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "default")))
	assert.False(t, noNamespace(apierrors.NewNotFound(schema.GroupResource{Group: "kro.run", Resource: "webapps"}, "x")))
	assert.False(t, noNamespace(apierrors.NewGenericServerResponse(404, "POST", schema.GroupResource{}, "", "", 0, false)))
	assert.False(t, noNamespace(errors.New("connection refused")))
}
