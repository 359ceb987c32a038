// Package secret provides clusters from kubeconfig Secrets on the hub, safe
// by default: a kubeconfig that would make the hub run a program, read a
// local file, go through a proxy it names, skip TLS verification, speak
// plain HTTP or dial a loopback, link-local or metadata address is refused
// unless the embedder opts in.
//
// # Secrets
//
// A kubeconfig Secret lives in Options.Namespace (default
// "fleetgraph-system"), carries the label fleetgraph.dev/kubeconfig=true
// (Options.LabelSelector) and holds a kubeconfig under the data key
// "kubeconfig" (Options.DataKey). Its cluster is named after the Secret, or
// after its fleetgraph.dev/cluster-name annotation. Its labels under
// cluster.fleetgraph.dev/ become the cluster's labels (Provider.Labels), so
// that the hub can place graphs by label selector:
//
//	apiVersion: v1
//	kind: Secret
//	metadata:
//	  name: eu-west-1
//	  namespace: fleetgraph-system
//	  labels:
//	    fleetgraph.dev/kubeconfig: "true"
//	    cluster.fleetgraph.dev/region: eu
//	data:
//	  kubeconfig: <base64 kubeconfig with inline credentials>
//
// Only the kubeconfig's current context is used. The provider watches the
// Secrets through a cache of its own, limited to that namespace and label
// selector by the API server, so the hub needs list and watch on
// Secrets in that namespace only, plus create and patch on events.k8s.io
// Events there.
//
// # Lifecycle
//
// When a Secret appears, the provider parses and validates its kubeconfig,
// checks that the server answers an authenticated discovery request, creates
// a cluster, waits for its cache to sync and only then engages it. When the
// kubeconfig changes (rotated credentials, another server), the old cluster
// is disengaged (its context cancelled) and stopped, its idle connections
// closed, and then the new one is engaged under the same name. When the
// Secret is deleted or loses its label, or its kubeconfig becomes unusable,
// the cluster is disengaged. A label or annotation change that leaves the
// kubeconfig as it was only updates the cluster's labels.
//
// Engaging and disengaging are built on multicluster-runtime's
// pkg/clusters. Its Clusters removes a cluster by name when that cluster's
// Start returns, which would also remove a replacement engaged under the same
// name meanwhile; the provider therefore registers each engagement under an
// internal key of its own and engages it under the public name.
//
// # Safety
//
// The policy below is access.Safety (Safety is another name for it), which
// providers/clusterprofile and providers/capi apply too.
//
// client-go runs a kubeconfig's exec credential plugin, and lets an
// auth-provider plugin run, the first time a request is made: a kubeconfig
// Secret that anyone with write access to the namespace can edit would
// otherwise let them run commands on the hub and read its files. The
// provider validates the parsed kubeconfig before it builds any client
// configuration and refuses (with ErrUnsafeKubeconfig) exec plugins,
// auth-provider plugins and every field that names a local file
// (certificate-authority, client-certificate, client-key, tokenFile), unless
// Options.Safety allows them. A server URL with credentials in it is refused
// as invalid.
//
// The same writer could aim the hub at what only the hub can reach: its own
// loopback services, the cloud's instance metadata (169.254.169.254), any
// in-cluster Service, and read the outcome in the Secret's events, a
// server-side request forgery and port-scan oracle. So, unless Safety
// allows them, a cluster's proxy-url, insecure-skip-tls-verify and http://
// servers are refused, and every address the hub dials for a kubeconfig
// passes an address policy: loopback (and 0.0.0.0) and link-local and
// metadata addresses are refused, private ones accepted unless
// Safety.DenyPrivate, and Safety.AllowedCIDRs and DeniedCIDRs override the
// kinds (the longer prefix wins). An address in the kubeconfig is checked
// when the Secret is read; a name is checked when it is dialled: it is
// resolved, every address it resolves to must pass (one refused address
// refuses the name), and the connection goes to a checked address, never to
// the name again. This holds for every connection of the cluster's clients
// for as long as it is engaged (the check is the rest.Config's Dial, which
// copies of the configuration keep), so a name whose answer changes later
// (DNS rebinding) is refused then. A proxy of the hub's environment
// (HTTPS_PROXY) is the embedder's and is dialled as such; the server behind
// it is checked before each request goes to it, and the proxy resolves the
// name again. A proxy a kubeconfig names (AllowProxyURL) is checked like a
// server, and the server behind it is the proxy's business.
//
// A refusal is reported as UnsafeKubeconfig, on the Secret and in the hub's
// fleet status (NotEngaged), and waits for the Secret to change. What the
// provider says about a server it could not use is short and made of fixed
// phrases (connection refused, no answer within the timeout, a certificate
// not trusted, the status code of an answer): never a response body or a
// reason phrase the server chose, at most 256 bytes; the whole error goes to
// the hub's log at V(1).
//
// A Secret that cannot be used (missing key: ErrMissingKubeconfig; malformed
// kubeconfig: ErrInvalidKubeconfig; refused feature or address:
// ErrUnsafeKubeconfig; unreachable server or rejected credentials) is
// reported with a Warning Event on the Secret and a log line, and skipped;
// the other clusters are not affected. An unreachable server is retried with
// backoff; the other problems wait for the Secret to change. Events, logs
// and errors name the fields and entries concerned, never their values.
//
// # Secret targets
//
// Hub graphs may name a target cluster by its kubeconfig Secret
// (KREP-012's kubeconfigSecretName and kubeconfigSecretNamespace).
// SecretCluster answers which cluster came from a Secret, from the
// provider's memory of the Secrets it reads: it never reads the Secret a
// graph names, so naming one the provider does not read (another
// namespace, not selected) reveals nothing and maps to nothing.
//
// # Wiring
//
// The provider is a multicluster-runtime provider that the multicluster
// manager starts, plus a controller on the manager's local (hub) manager:
//
//	provider := secret.New(secret.Options{})
//	mgr, err := mcmanager.New(hubConfig, provider, manager.Options{})
//	...
//	err = provider.SetupWithManager(mgr)
//	...
//	err = mgr.Start(ctx) // starts the provider: an embedder that starts
//	                     // only mgr.GetLocalManager() gets no clusters
//
// A local test fleet whose API servers listen on 127.0.0.1 needs
// secret.Options{Safety: secret.Safety{AllowLoopback: true}}.
package secret
