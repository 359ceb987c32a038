// Package capi provides clusters from Cluster API: every Cluster
// (cluster.x-k8s.io/v1beta2) on the hub, the management cluster, is
// engaged from the kubeconfig Secret Cluster API writes for it. A platform
// that creates its clusters with Cluster API need not copy them into
// kubeconfig Secrets of its own: the hub serves graphs on each new cluster
// once its control plane is up, places them by the Cluster's labels, and
// follows kubeconfig rotations and deletions.
//
// # Clusters
//
// The provider reads the Clusters in Options.Namespace (default "default";
// every namespace with AllNamespaces) that Options.LabelSelector selects
// (default: all), at API version v1beta2 (Cluster API v1.11 or newer). A
// Cluster's cluster is named after it; two Clusters of one name in two
// namespaces are one cluster name, held by the first and reported on the
// second. Its labels are the Cluster's labels; a relabel is told to the
// hub at once (hub.ClusterLabelNotifier).
//
// A Cluster is engaged once its control plane is initialized:
// status.initialization.controlPlaneInitialized is true, or its
// ControlPlaneInitialized condition is True. Until then it is reported
// (ControlPlaneNotReady). Its kubeconfig is the Secret
// <cluster name>-kubeconfig in the Cluster's namespace, labelled
// cluster.x-k8s.io/cluster-name, under the data key "value". When the
// Secret changes (Cluster API rotates the client certificate before it
// expires), the cluster is engaged again in place, its name never leaving
// ClusterNames meanwhile; when the Secret goes, or the Cluster is deleted
// (from its deletionTimestamp on), the cluster is disengaged.
//
// # Safety
//
// The kubeconfig Secrets are checked exactly as providers/secret checks
// its own (access.Safety, Options.Safety): exec and auth-provider plugins,
// local files, proxy-url, insecure-skip-tls-verify, http:// servers and
// loopback, link-local and metadata addresses are refused unless allowed,
// and every connection is checked when it is dialled. Whoever may write
// Clusters or Secrets in the namespace read could otherwise aim the hub
// anywhere. Refusals and failures are reported on the Cluster, as Events
// and in the hub's fleet status (hub.EngagementReporter), without
// credentials.
//
// # Wiring
//
// The provider is a multicluster-runtime provider that the multicluster
// manager starts, plus a controller on the manager's local (hub) manager.
// The hub needs list and watch on clusters.cluster.x-k8s.io and on Secrets
// in the namespace read (only those labelled cluster.x-k8s.io/cluster-name
// are listed), and create and patch on events.k8s.io Events there:
//
//	provider := capi.New(capi.Options{Namespace: "clusters"})
//	mgr, err := mcmanager.New(managementConfig, provider, manager.Options{})
//	...
//	err = provider.SetupWithManager(mgr)
//	...
//	err = mgr.Start(ctx) // starts the provider
package capi
