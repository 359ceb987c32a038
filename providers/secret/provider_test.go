package secret

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

func TestNewFillsDocumentedDefaults(t *testing.T) {
	p := New(Options{})
	assert.Equal(t, DefaultNamespace, p.opts.Namespace)
	assert.True(t, p.opts.LabelSelector.Matches(labels.Set{DefaultSecretLabel: "true"}))
	assert.False(t, p.opts.LabelSelector.Matches(labels.Set{DefaultSecretLabel: "false"}))
	assert.Equal(t, DefaultDataKey, p.opts.DataKey)
	assert.Equal(t, float32(DefaultQPS), p.opts.QPS)
	assert.Equal(t, DefaultBurst, p.opts.Burst)
	assert.Equal(t, DefaultConnectTimeout, p.opts.ConnectTimeout)
	assert.Equal(t, DefaultCacheSyncTimeout, p.opts.CacheSyncTimeout)
	assert.Equal(t, DefaultMaxConcurrentReconciles, p.opts.MaxConcurrentReconciles)
	assert.Equal(t, Safety{}, p.opts.Safety, "nothing unsafe is allowed by default")

	assert.Empty(t, New(Options{AllNamespaces: true}).opts.Namespace)
}

func TestClusterNameAndLabelsComeFromTheSecret(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Labels: map[string]string{
		DefaultSecretLabel:       "true",
		LabelPrefix + "region":   "eu",
		LabelPrefix:              "empty key is ignored",
		"app.kubernetes.io/name": "ignored",
	}}}
	assert.Equal(t, multicluster.ClusterName("creds"), clusterName(s))
	assert.Equal(t, map[string]string{"region": "eu"}, clusterLabels(s))

	s.Annotations = map[string]string{ClusterNameAnnotation: "eu-1"}
	assert.Equal(t, multicluster.ClusterName("eu-1"), clusterName(s))
}

func TestGetOfAnUnknownClusterWrapsErrClusterNotFound(t *testing.T) {
	_, err := New(Options{}).Get(t.Context(), "nope")
	assert.ErrorIs(t, err, multicluster.ErrClusterNotFound)
	assert.Nil(t, New(Options{}).Labels("nope"))
}
