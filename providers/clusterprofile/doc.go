// Package clusterprofile provides clusters from ClusterProfiles, SIG
// Multicluster's cluster inventory API (KEP-4322,
// multicluster.x-k8s.io/v1alpha1), which cluster managers such as Open
// Cluster Management and GKE Fleet write on a hub. A platform that keeps
// its clusters there need not copy them into kubeconfig Secrets: the hub
// engages every profile it reads, places graphs by the profiles' labels
// and properties, and follows them as they change.
//
// # Profiles
//
// The provider reads the ClusterProfiles in Options.Namespace (default
// "fleetgraph-system"; every namespace with AllNamespaces) that
// Options.LabelSelector selects (default: all). A profile's cluster is
// named after the profile; two profiles of one name in two namespaces
// are one cluster name, held by the first and reported on the second.
//
// A cluster's labels are its profile's labels, plus each of its
// status.properties as the label PropertyPrefix+name
// ("property.fleetgraph.dev/region: eu"): placement, rollout waves,
// cluster.labels and fleet.clusters select by them. A property whose name
// does not make a valid label key, or whose value is not a valid label
// value, is left out and reported (PropertiesSkipped). A relabel is told
// to the hub at once (hub.ClusterLabelNotifier).
//
// A profile whose ControlPlaneHealthy condition has been False for
// Options.UnhealthyGrace (default two minutes, from the condition's
// lastTransitionTime) is disengaged, and engaged again once the condition
// is True or Unknown, or gone.
//
// # Credentials
//
// A profile is reached in one of two ways, in this order:
//
//   - A credential plugin (KEP-5339). The profile lists access providers
//     in status.accessProviders (or the deprecated credentialProviders),
//     each a name and a cluster (server, certificate authority,
//     extensions). The platform lists the plugins it allows in
//     Options.CredentialPlugins, each a name, the absolute path of a
//     program, arguments and environment; the first allowed plugin, in
//     the platform's order, that the profile offers is run for it. The
//     program receives the profile's cluster (and its
//     client.authentication.k8s.io/exec extension as spec.cluster.config)
//     on KUBERNETES_EXEC_INFO and prints an ExecCredential: a token, or a
//     client certificate and key. A token is renewed in place, without
//     engaging the cluster again, once four fifths of its life have
//     passed; a new client certificate engages the cluster again.
//   - A kubeconfig Secret in the profile's namespace labelled
//     x-k8s.io/cluster-inventory-consumer=<Options.ConsumerName> (default
//     "fleetgraph") and x-k8s.io/cluster-profile=<profile name>, holding a
//     kubeconfig under "Config" (Options.SecretDataKey): the access pattern
//     of multicluster-runtime's cluster inventory provider.
//
// A profile with neither is reported (NoCredentials) naming the access
// providers it offered, and waits for a change. A profile that loses its
// credentials is disengaged; one whose credentials change is engaged
// again in place (the cluster's name never leaves ClusterNames meanwhile).
//
// # Safety
//
// Whoever writes a ClusterProfile, or its status, chooses the server the
// hub dials and the cluster a plugin is run for. So:
//
//   - A profile never names a program. Only Options.CredentialPlugins run
//     (none by default), each by its absolute path, never looked up in
//     PATH; a profile's additional-args and additional-envs extensions are
//     ignored.
//   - A plugin runs with its own arguments and environment only (nothing
//     of the hub's: no PATH, HOME, proxy or cloud credentials), standard
//     input closed, in "/", for at most Options.PluginTimeout (default 10
//     s) and writing at most Options.MaxPluginOutput (default 64 KiB).
//     What it wrote is never quoted in events or errors; the start of its
//     standard error goes to the hub's log at V(1).
//   - The cluster an access provider describes is checked exactly as a
//     kubeconfig Secret's cluster is (access.Safety, Options.Safety):
//     proxy-url, insecure-skip-tls-verify, http:// servers, local files
//     and loopback, link-local and metadata addresses are refused unless
//     allowed, and the server's name is resolved and checked before the
//     plugin runs. Every connection of the cluster is checked again when
//     it is dialled. Kubeconfig Secrets are checked the same way.
//   - Refusals and failures are reported on the profile, as Events and in
//     the hub's fleet status (hub.EngagementReporter), in fixed phrases
//     that carry no credentials, no program output and no server answer.
//
// A plugin that returns the same credential whatever cluster it is asked
// for (the hub's own cloud identity, say) hands it to whichever server a
// profile names: allow such plugins only where the writers of profiles
// are trusted, or confine the servers with Safety.AllowedCIDRs and
// Safety.DeniedCIDRs.
//
// # Wiring
//
// The provider is a multicluster-runtime provider that the multicluster
// manager starts, plus a controller on the manager's local (hub) manager.
// The hub needs the ClusterProfile CRD installed, list and watch on
// clusterprofiles.multicluster.x-k8s.io and on Secrets in the namespace
// read, and create and patch on events.k8s.io Events there:
//
//	provider := clusterprofile.New(clusterprofile.Options{
//		Namespace: "fleet",
//		CredentialPlugins: []clusterprofile.CredentialPlugin{
//			{Name: "secretreader", Command: "/usr/local/bin/secretreader-plugin"},
//		},
//	})
//	mgr, err := mcmanager.New(hubConfig, provider, manager.Options{})
//	...
//	err = provider.SetupWithManager(mgr)
//	...
//	err = mgr.Start(ctx) // starts the provider
package clusterprofile
