package upstream_test

import (
	"context"
	"fmt"
	"log"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/provider/scripted"
	"github.com/wardenhq/warden/schema"
	"github.com/wardenhq/warden/upstream"
)

// An agent whose registry holds a built-in tool and the tools of an MCP server,
// discovered before the registry's one Bind. (Not run: it needs notes-server, from
// examples/gateway/notes-server, on PATH.)
func ExampleRegisterTools() {
	ctx := context.Background()
	var reg warden.Registry
	reg.Register(warden.Executable{
		Tool: warden.Tool{Name: "clock", Description: "Tells the time."},
		Run:  func(context.Context, warden.Args, *warden.Credential) (any, error) { return "noon", nil },
	})

	tools, err := upstream.RegisterTools(ctx, &reg, upstream.ToolsConfig{
		Servers: []upstream.ServerConfig{{Name: "notes", Command: "notes-server", Args: []string{"-dir", "notes"}}},
		// The zero policy denies every command and URL: admit this one server.
		Transport: upstream.TransportPolicy{AllowCommands: true, Commands: []string{"notes-server"}},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tools.Close(context.Background()) // stops notes-server
	for _, p := range tools.Problems() {
		fmt.Println("not loaded:", p) // e.g. a server the transport policy denied
	}

	pol, err := policy.Parse("policy.yaml", []byte("version: 1\nmode: rules\nrules:\n  allow:\n    clock: ['*']\n    mcp__notes__list_notes: ['*']\n"), nil)
	if err != nil {
		log.Fatal(err)
	}
	guard, err := reg.Bind(warden.Config{Checkers: []warden.Checker{pol}, Schemas: schema.Compiler{}, Revision: pol.Revision()})
	if err != nil {
		log.Fatal(err)
	}
	a, err := agent.New(scripted.New(scripted.Call("c1", "mcp__notes__list_notes", `{}`), scripted.Text("Listed.")), guard, nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := a.Run(ctx, "list my notes")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Calls[0].Tool, res.Calls[0].Status, res.Answer)
}
