// Package secret provides clusters from kubeconfig Secrets on the hub, safe
// by default: a kubeconfig that would make the hub run a program or read a
// local file is refused unless the embedder opts in.
//
// Not built yet.
package secret
