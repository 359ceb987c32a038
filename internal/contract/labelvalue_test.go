package contract

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestLabelValueIsAlwaysValid(t *testing.T) {
	dashAt63 := strings.Repeat("a", 62) + "-" + strings.Repeat("b", 7)
	for _, name := range []string{"demo", strings.Repeat("x", 63), dashAt63, strings.Repeat("a.", 60), strings.Repeat("a-", 100)} {
		v := LabelValue(name)
		assert.Empty(t, validation.IsValidLabelValue(v), "label value %q of %q", v, name)
		if len(name) <= maxLabelValue {
			assert.Equal(t, name, v, "a name that fits is kept")
		}
	}
	assert.NotEqual(t, LabelValue(strings.Repeat("a", 70)+"1"), LabelValue(strings.Repeat("a", 70)+"2"),
		"long names that share a prefix still differ")
}
