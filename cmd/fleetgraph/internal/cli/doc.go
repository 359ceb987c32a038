// Package cli is the fleetgraph command line: the commands, their flags
// and their output. cmd/fleetgraph is a thin main around Main.
//
// It is for two kinds of people. Authors of ResourceGraphDefinitions check
// them with the hub's own compiler without a cluster (validate), see what
// the hub would generate (generate crd, generate instance) and draw the
// graph (diagram). People who run a fleet read, from the hub cluster
// alone, which graph serves which revision on which cluster and what is
// wrong (status), and steer GraphRollouts (rollout). It follows kubectl's
// conventions (--kubeconfig, --context, -n, -o) and also runs as a kubectl
// plugin, named kubectl-fleetgraph, with kubectl's completion through
// kubectl_complete-fleetgraph. One flag departs from kubectl: --cluster
// always names a fleet cluster, so the kubeconfig's cluster entry is
// --kubeconfig-cluster.
//
// It imports only the SDK's public packages (the compiler, its resolver,
// the API types) and reads on the hub only what the hub publishes there.
package cli
