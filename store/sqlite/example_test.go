package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/sqlite" // registers sqlite://
)

// A governed call is recorded before the tool runs and completed after; a refused call
// is recorded once. The chain verifies.
func Example() {
	dir, _ := os.MkdirTemp("", "warden")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "warden.db"))
	if err != nil {
		panic(err)
	}
	defer s.Close()

	args := warden.MustParseArgs(`{"command":"ls"}`)
	ref, err := s.BeginCall(ctx, store.CallRecord{Tool: "shell", ArgsDigest: args.Digest(), Executed: true})
	if err != nil {
		return // fail closed: the tool must not run unrecorded
	}
	// ... run the tool ...
	s.EndCall(context.WithoutCancel(ctx), ref, store.Completion{Status: warden.StatusRan})
	s.RecordCall(ctx, store.CallRecord{Tool: "rm", RuleID: "fs.no-delete", Status: warden.StatusRefused})

	calls, _ := s.QueryCalls(ctx, store.CallFilter{})
	for _, c := range calls {
		fmt.Printf("%d %s %s rule=%q\n", c.Seq, c.Tool, c.Status, c.RuleID)
	}
	rep, _ := s.VerifyAudit(ctx)
	fmt.Println("entries:", rep.Entries, "ok:", rep.OK)
	// Output:
	// 1 shell ran rule=""
	// 3 rm refused rule="fs.no-delete"
	// entries: 3 ok: true
}
