package simpleschema

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// checkBounds rejects bounds no value can meet and a default outside
// them. kro v0.9.3 passes both on, and the API server then refuses the
// CRD (a default must validate against its own schema) or every instance:
// either way the RGD cannot work, so it is reported when compiling.
func checkBounds(s *apiextensionsv1.JSONSchemaProps) error {
	if s.Minimum != nil && s.Maximum != nil && *s.Minimum > *s.Maximum {
		return fmt.Errorf("%w: minimum %v is greater than maximum %v", ErrInvalidMarker, *s.Minimum, *s.Maximum)
	}
	if err := checkCounts("Length", s.MinLength, s.MaxLength); err != nil {
		return err
	}
	if err := checkCounts("Items", s.MinItems, s.MaxItems); err != nil {
		return err
	}
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

func checkCounts(what string, lo, hi *int64) error {
	if lo != nil && hi != nil && *lo > *hi {
		return fmt.Errorf("%w: min%s %d is greater than max%s %d", ErrInvalidMarker, what, *lo, what, *hi)
	}
	return nil
}
