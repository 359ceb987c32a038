package cli

import "github.com/spf13/cobra"

func newStatusCommand(g *globals, name string) *cobra.Command  { return &cobra.Command{Use: "status"} }
func newRolloutCommand(g *globals, name string) *cobra.Command { return &cobra.Command{Use: "rollout"} }
