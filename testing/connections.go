package testing

import (
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// CloseIdleConnections closes the idle connections of s's HTTP client.
// Call it once the clusters that share s have stopped (they do not close
// what they share): otherwise each connection keeps a reading goroutine
// until its idle timeout, 90 s later, and a fleet's watches fill one
// HTTP/2 connection per hundred or so. A connection still finishing a
// stopped watch is not idle yet, so a caller that needs them all gone
// calls it again until they are. (http.Client's own CloseIdleConnections
// does not reach through client-go's wrapping round trippers; this does.)
func (s *SharedConnection) CloseIdleConnections() {
	utilnet.CloseIdleConnectionsFor(s.HTTPClient.Transport)
}
