package testing

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A write between the reflector's list and its watch must reach the watch:
// the fake client cannot resume a watch from the list's resourceVersion.
func TestListWatchLosesNoWriteBetweenListAndWatch(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(NewScheme()).Build()
	lw := &gaplessListWatch{newList: func() (client.ObjectList, error) { return &corev1.ConfigMapList{}, nil }, client: c}

	_, err := lw.list(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "in-the-gap"}}))
	w, err := lw.watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()

	select {
	case ev := <-w.ResultChan():
		require.Equal(t, watch.Added, ev.Type)
		require.Equal(t, "in-the-gap", ev.Object.(client.Object).GetName())
	case <-time.After(10 * time.Second):
		t.Fatal("the write made between list and watch never arrived")
	}
}
