package simpleschema

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// checkBounds rejects a default outside the field's bounds. kro v0.9.3
// passes it on and the API server refuses the CRD (a default must validate
// against its own schema), so the RGD cannot work: it is reported when
// compiling, naming the marker. Bounds no value can meet (minimum above
// maximum) are accepted, as kro and the API server accept them.
func checkBounds(s *apiextensionsv1.JSONSchemaProps) error {
	if s.Default == nil || (s.Type != "integer" && s.Type != "number") {
		return nil
	}
	var d float64
	if err := json.Unmarshal(s.Default.Raw, &d); err != nil {
		return nil //nolint:nilerr // the default marker has checked it already
	}
	if s.Minimum != nil && d < *s.Minimum {
		return fmt.Errorf("%w: default %v is less than minimum %v", ErrInvalidMarker, d, *s.Minimum)
	}
	if s.Maximum != nil && d > *s.Maximum {
		return fmt.Errorf("%w: default %v is greater than maximum %v", ErrInvalidMarker, d, *s.Maximum)
	}
	return nil
}
