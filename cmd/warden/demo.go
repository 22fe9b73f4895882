package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/demo"
)

// `warden demo` plays the scenes of internal/demo: offline, scripted, no API key.

type demoOptions struct {
	json bool
}

func newDemoCommand(stdout io.Writer) *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo [SCENE]...",
		Short: "Watch Warden govern an agent, offline and without an API key",
		Long: `Demo runs short scenes through the real governed agent loop (the Guard, the
policy package, agent.Agent) with a scripted model, so it needs no API key and prints
the same thing every time. The tools are in-memory fakes that only record that they
ran; nothing touches your files, your shell or the network.

For each scene it prints the calls the model made, every permission decision
(capability, target, effect, rule id), what the model read back, and how many times a
tool actually executed.

Scenes: ` + strings.Join(demo.Names(), ", ") + `. With no SCENE, all of them run.

The exit code is 0 when every scene ended as designed, 1 otherwise.`,
		Example: `  warden demo
  warden demo halt ask
  warden demo --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := newDemoProgram(o, args, stdout)
			return execute(cmd.Context(), p, err)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, `print one JSON object {"scenes":[...]}`)
	return cmd
}

// newDemoProgram checks the scene names; an unknown one is a usage error.
func newDemoProgram(o demoOptions, names []string, w io.Writer) (*demoProgram, error) {
	if err := demo.Check(names); err != nil {
		return nil, usageErrorf("%w", err)
	}
	return &demoProgram{o: o, names: names, w: w}, nil
}

// demoProgram is one `warden demo`: the chosen scenes, played in order.
type demoProgram struct {
	noResources
	o     demoOptions
	names []string
	w     io.Writer
}

// Run plays the scenes and prints them; it fails (exit 1) when a scene did not end as
// designed: silently after the text (which says so), with the scenes' errors after JSON.
func (p *demoProgram) Run(ctx context.Context) error {
	err := demo.Run(ctx, p.names, p.w, &demo.Options{JSON: p.o.json})
	var failed *demo.SceneError
	switch {
	case errors.As(err, &failed):
		if p.o.json {
			return internalError(errors.Join(failed.Scenes...))
		}
		return silentExit(exitInternal)
	case err != nil:
		return internalError(fmt.Errorf("writing the demo: %w", err))
	}
	return nil
}
