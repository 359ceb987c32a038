package graph

import (
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Placeholder until the compiler lands; the compiler issue replaces this file.

var errNotImplemented = errors.New("graph: compiler not implemented yet")

type statusProgram struct{}

func (*statusProgram) eval(Values) (map[string]any, error) { return nil, errNotImplemented }

type nodeProgram struct{}

func (*nodeProgram) included(Values) (bool, error) { return false, errNotImplemented }
func (*nodeProgram) iterations(Values) ([]map[string]any, error) {
	return nil, errNotImplemented
}
func (*nodeProgram) render(Values, map[string]any) (*unstructured.Unstructured, error) {
	return nil, errNotImplemented
}
func (*nodeProgram) ref(Values) (ExternalRef, error)            { return ExternalRef{}, errNotImplemented }
func (*nodeProgram) ready(Values, map[string]any) (bool, error) { return false, errNotImplemented }
