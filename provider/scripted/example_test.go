package scripted_test

import (
	"context"
	"fmt"

	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/provider/scripted"
)

func Example() {
	p := scripted.New(
		scripted.Call("c1", "read_file", `{"path":"notes.txt"}`),
		scripted.Text("The notes say hello."),
	)
	ctx := context.Background()

	turn, _ := p.Complete(ctx, agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "Read my notes."}}})
	fmt.Println(turn.ToolCalls[0].Name, string(turn.ToolCalls[0].Args))

	turn, _ = p.Complete(ctx, agent.ModelRequest{Messages: []agent.Message{
		{Role: agent.RoleUser, Text: "Read my notes."},
		{Role: agent.RoleAssistant, ToolCalls: turn.ToolCalls},
		{Role: agent.RoleUser, ToolResults: []agent.ToolResult{{CallID: "c1", Content: "hello"}}},
	}})
	fmt.Println(turn.Text)

	// What the model was shown on the second call:
	fmt.Println(p.Requests()[1].Messages[2].ToolResults[0].Content)

	_, err := p.Complete(ctx, agent.ModelRequest{})
	fmt.Println(err)
	// Output:
	// read_file {"path":"notes.txt"}
	// The notes say hello.
	// hello
	// scripted provider: no reply left (2 replies scripted, call 3)
}
