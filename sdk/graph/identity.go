package graph

// identity evaluates metadata.namespace and metadata.name of the template.
func (np *nodeProgram) identity(vals Values, iteration map[string]any) (string, string, error) {
	if np.template == nil {
		return "", "", &Error{ResourceID: np.id, Err: errorf(ErrInvalid, "an externalRef has no template")}
	}
	sc := np.scope(vals, iteration)
	metadata := child(np.template, "metadata")
	ns, err := evalString(sc, child(metadata, "namespace"), "metadata.namespace")
	if err != nil {
		return "", "", err
	}
	name, err := evalString(sc, child(metadata, "name"), "metadata.name")
	return ns, name, err
}

// child returns the piece of an object template under key, or nil.
func child(t tmpl, key string) tmpl {
	switch t := t.(type) {
	case *tmplObject:
		for i, k := range t.keys {
			if k == key {
				return t.vals[i]
			}
		}
	case tmplLiteral:
		if m, ok := t.v.(map[string]any); ok {
			if v, ok := m[key]; ok {
				return tmplLiteral{v: v}
			}
		}
	}
	return nil
}
