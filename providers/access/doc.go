// Package access holds what every fleetgraph provider checks before the
// hub dials a cluster that someone else described, and how it reports a
// cluster it could not use. A kubeconfig Secret, a ClusterProfile's access
// provider and a Cluster API kubeconfig Secret are all written by someone
// other than the hub's operator; whoever writes them must not be able to
// make the hub run a program, read its files or reach what only the hub
// can reach. So providers/secret, providers/clusterprofile and
// providers/capi build every client configuration through one Safety:
//
//   - RESTConfig and ClientConfig validate a kubeconfig's current context
//     (Validate) before they build anything: exec and auth-provider
//     plugins, fields naming a local file, proxy-url,
//     insecure-skip-tls-verify and http:// servers are refused with
//     ErrUnsafeKubeconfig unless the Safety allows them, and a server
//     given as a loopback, link-local or metadata address is refused with
//     ErrRefusedAddress.
//   - Every connection of a client built from the result is dialled
//     through the address policy: a name is resolved when it is dialled,
//     every address it stands for must pass, and the connection goes to a
//     checked address, so that a name whose answer changes later (DNS
//     rebinding) is refused then. CheckServer runs the same check without
//     dialling, for work that must not start for a refused server.
//   - Probe checks that a server answers an authenticated discovery
//     request and says what went wrong in fixed phrases, never in words
//     the server chose: what a provider reports goes to the events of the
//     object that described the cluster, where its writer reads it.
//
// The Reason constants are the Event reasons every provider shares.
package access
