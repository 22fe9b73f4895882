package gateway_test

import (
	"slices"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// A 2026-07-28 client subscribes by subscriptions/listen (the go-sdk client opens
// one listen stream per subscribed URI): the subscription is judged and recorded
// like a resources/subscribe of the principal whose token carried the listen
// request, the updates come on that stream, and ending the stream ends the
// subscription (recorded, and the upstream's with it). A role that may not read the
// URI is refused and recorded.
func TestGatewaySubscriptionsAt2026(t *testing.T) {
	e := subStart(t)
	updates := make(subUpdates, 10)
	a := connect2026(t, e.url, gwReaderToken, e.tr, updates.options())
	if err := subSubscribe(t, a, subWatched); err != nil {
		t.Fatalf("subscribe at 2026-07-28: %v", err)
	}
	w := e.connect(t, gwWriterToken, nil)
	subTrigger(t, w, subWatched, 1)
	updates.next(t, "the 2026-07-28 reader", subWatched)
	if rec := e.lastCall(t, "subscribe:resource:conf", "reader-agent"); rec.Status != warden.StatusRan || rec.Session != "principal:/reader-agent" {
		t.Errorf("audit of the 2026-07-28 subscription: %+v", rec)
	}

	wr := connect2026(t, e.url, gwWriterToken, e.tr, nil)
	_ = subSubscribe(t, wr, subWatched) // the SDK's listen goes on in the background
	if rec := e.lastCall(t, "subscribe:resource:conf", "writer-agent"); rec.Status != warden.StatusRefused || rec.Stage != warden.StageLookup {
		t.Errorf("audit of the writer's 2026-07-28 subscription: %+v, want refused (resources hidden from its role)", rec)
	}

	subUnsubscribe(t, a, subWatched)
	e.log.WaitCount(t, time.Minute, 1, subLogged("unsubscribed", subWatched)...)
	subTrigger(t, w, subWatched, 0)
	recs := e.calls(t, "unsubscribe:resource:conf", "reader-agent")
	if !slices.ContainsFunc(recs, func(r store.CallRecord) bool { return r.Status == warden.StatusRan }) {
		t.Errorf("the end of the reader's listen stream was not recorded as an unsubscribe: %+v", recs)
	}
}
