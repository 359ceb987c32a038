package graph

// TypeChecked reports whether g's child kinds were typed from schemas, that
// is whether Compile had a Resolver.
func (g *Graph) TypeChecked() bool { return g.opts.Resolver != nil }

// CheckSchemas type-checks g's RGD again, with the same options except that
// r supplies the child kinds' schemas, and returns what fails: nil when
// every expression and template that g's kinds are used in type-checks
// against r's schemas too. A kind r does not know (ErrSchemaNotFound) is
// typed dyn, as Options.DynamicUnknownKinds does.
//
// The hub compiles against the hub cluster's schemas; CheckSchemas lets it
// ask whether a spoke, which may serve a different version of a child
// kind, agrees before the graph is served there. The error is what Compile
// would return: *Errors naming the resource, path and expression, joined.
// It returns nil at once for a graph compiled without a Resolver, since
// nothing was type-checked then.
func (g *Graph) CheckSchemas(r SchemaResolver) error {
	if !g.TypeChecked() || r == nil {
		return nil
	}
	if g.source == nil {
		return &Error{Err: errorf(ErrInvalid, "graph %q was not built by Compile", g.Name)}
	}
	opts := g.opts
	opts.Resolver = r
	opts.DynamicUnknownKinds = true
	_, err := Compile(g.source, opts)
	return err
}
