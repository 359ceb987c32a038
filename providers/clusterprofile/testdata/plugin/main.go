// Command plugin is the KEP-5339 credential plugin of the clusterprofile
// provider's integration tests. It answers the server on its
// KUBERNETES_EXEC_INFO with the token PLUGIN_TOKENS (a JSON file of tokens
// by server URL) holds for it, valid for PLUGIN_TTL (a Go duration;
// default an hour), and appends a line to PLUGIN_MARKER for every run:
// the server, then the names of its environment variables. A test that
// finds no marker file knows the plugin never ran.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

type execCredential struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Cluster struct {
			Server string `json:"server"`
		} `json:"cluster"`
	} `json:"spec,omitempty"`
	Status *status `json:"status,omitempty"`
}

type status struct {
	Token               string `json:"token"`
	ExpirationTimestamp string `json:"expirationTimestamp"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	var in execCredential
	if err := json.Unmarshal([]byte(os.Getenv("KUBERNETES_EXEC_INFO")), &in); err != nil {
		return fmt.Errorf("reading KUBERNETES_EXEC_INFO: %w", err)
	}
	server := in.Spec.Cluster.Server
	if err := mark(server); err != nil {
		return err
	}
	tokens := map[string]string{}
	data, err := os.ReadFile(os.Getenv("PLUGIN_TOKENS"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &tokens); err != nil {
		return err
	}
	token, ok := tokens[server]
	if !ok {
		return fmt.Errorf("no token for %s", server)
	}
	ttl := time.Hour
	if s := os.Getenv("PLUGIN_TTL"); s != "" {
		if ttl, err = time.ParseDuration(s); err != nil {
			return err
		}
	}
	out := execCredential{APIVersion: in.APIVersion, Kind: "ExecCredential",
		Status: &status{Token: token, ExpirationTimestamp: time.Now().Add(ttl).UTC().Format(time.RFC3339)}}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// mark appends the server and the names of the environment's variables to
// PLUGIN_MARKER.
func mark(server string) error {
	var names []string
	for _, kv := range os.Environ() {
		names = append(names, strings.SplitN(kv, "=", 2)[0])
	}
	slices.Sort(names)
	f, err := os.OpenFile(os.Getenv("PLUGIN_MARKER"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, server, strings.Join(names, ","))
	return err
}
