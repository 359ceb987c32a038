// Package docs holds no code: it is fleetgraph's documentation (Markdown
// beside this file) and the tests that keep it true. They run with plain
// `go test ./...`, no API server:
//
//   - every relative link and #anchor of README.md, docs/ and the examples'
//     READMEs resolves (links_test.go);
//   - every fenced yaml block parses; every ResourceGraphDefinition in one
//     compiles with the hub's compiler, and every instance or fleetgraph.dev
//     object passes its CRD's schema (yaml_test.go). A block that is not a
//     whole object says so on its first line: "# fragment: <why>";
//   - README.md stays short (links_test.go);
//   - every exported field of the public Options structs is listed in
//     reference/options.md or reference/limits.md (options_test.go).
package docs
