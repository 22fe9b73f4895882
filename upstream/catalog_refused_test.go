package upstream

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A server that declares prompts and resources but refuses to list some of them
// still serves its tools and what it did list; what it refused to list is not
// served, and a request for it is refused before anything is sent.
func TestCatalogListingRefused(t *testing.T) {
	u := newUpstream(t, faultServer("fault", "-refuse-listings"), Options{Policy: faultPolicy(1)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, _, err := u.Discover(ctx)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if len(tools) == 0 {
		t.Fatal("no tools served: a refused prompt or template listing must not take the tools down")
	}
	if got := u.Prompts(); len(got) != 0 {
		t.Errorf("prompts served from a refused listing: %+v", got)
	}
	if got := u.ResourceTemplates(); len(got) != 0 {
		t.Errorf("templates served from a refused listing: %+v", got)
	}
	res := u.Resources()
	if len(res) != 1 || res[0].URI != "fault://listed" || res[0].Server != "fault" {
		t.Fatalf("resources = %+v, want the one listed resource", res)
	}
	read, err := u.ReadResource(ctx, "fault://listed", nil)
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "listed contents" {
		t.Fatalf("ReadResource(listed) = %+v, %v", read, err)
	}
	if _, err := u.GetPrompt(ctx, "greet", nil, nil); !errors.Is(err, ErrNotSent) {
		t.Errorf("GetPrompt of a prompt that was never listed: %v, want ErrNotSent", err)
	}
	if _, err := u.ReadResource(ctx, "fault://unlisted", nil); !errors.Is(err, ErrNoResource) || !errors.Is(err, ErrNotSent) {
		t.Errorf("ReadResource(unlisted) = %v, want ErrNoResource and ErrNotSent", err)
	}
	// The connection that refused the listings stays in use: the tools still run.
	res2, err := u.Call(ctx, "echo", []byte(`{"text":"still here"}`), nil)
	if err != nil || ResultText(res2) != "still here" {
		t.Errorf("echo after the refused listings = %v, %v", res2, err)
	}
}
