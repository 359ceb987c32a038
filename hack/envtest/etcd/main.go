// Command etcd is the etcd server, built unchanged from go.etcd.io/etcd for
// fleetgraph's integration tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
