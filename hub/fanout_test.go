package hub

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClassifyMapsOutcomesToStates(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want CRDState
	}{
		{nil, CRDEstablished},
		{fmt.Errorf("%w: x", ErrConflict), CRDConflict},
		{fmt.Errorf("%w: kinds not served", ErrIncompatible), CRDIncompatible},
		{fmt.Errorf("%w: binding pending", ErrNotServedYet), CRDApplied},
		{errors.New("connection refused"), CRDError},
	} {
		state, msg := classify(tc.err)
		assert.Equal(t, tc.want, state)
		if tc.err != nil {
			assert.Equal(t, tc.err.Error(), msg)
		}
	}
}
