// The Server's own fulfilment of an upstream's input_required rounds (protocol
// 2026-07-28), in place of the SDK's: every input request is answered the way the
// same request sent by the upstream would be, so that roots/list is answered by the
// call in flight's ClientRequests.Roots and never from the SDK client's static root
// list.

//lint:file-ignore SA1019 sampling and roots are deprecated from protocol 2026-07-28 on, but input requests still carry them

package upstream

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// maxRounds bounds the rounds of one request: the request and its retries.
	maxRounds = 10
	// maxEmptyRounds bounds the rounds that ask for nothing (an upstream shedding
	// load answers input_required with no input requests).
	maxEmptyRounds = 3
)

// fulfilRounds is the innermost sending middleware of the clients of the classes
// that answer rounds (all but classRelay). For a tools/call, a prompts/get and a
// resources/read whose result carries input requests, it answers every request
// through answer (the client's handling of a request the upstream sends it: the
// SDK's for elicitation and sampling, which calls the Server's handlers and checks
// what the SDK checks, and answerRoots for roots/list), all of a round at once, and
// sends the request again with the answers and the upstream's requestState, at most
// maxRounds rounds in all and maxEmptyRounds that ask for nothing. An answer that
// fails ends the request with that error, the others of its round cancelled: an
// input response cannot carry an error back to the upstream. Errors read like the
// SDK's own fulfilment's.
func fulfilRounds(answer mcp.MethodHandler) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" && method != "prompts/get" && method != "resources/read" {
				return next(ctx, method, req)
			}
			empty := 0
			for round := 1; ; round++ {
				res, err := next(ctx, method, req)
				if err != nil {
					return res, err
				}
				reqs, state, ok := inputRound(res)
				if !ok {
					return res, nil
				}
				if len(reqs) == 0 {
					empty++
					if empty >= maxEmptyRounds {
						return nil, fmt.Errorf("multi-round-trip: exceeded maximum load-shedding retries (%d)", maxEmptyRounds)
					}
				}
				if round >= maxRounds {
					return nil, fmt.Errorf("multi-round-trip: exceeded maximum retries (%d)", maxRounds)
				}
				cs, ok := req.GetSession().(*mcp.ClientSession)
				if !ok {
					return res, nil
				}
				responses, err := fulfil(ctx, answer, cs, reqs)
				if err != nil {
					return nil, err
				}
				if req, err = retryOf(req, cs, responses, state); err != nil {
					return nil, err
				}
			}
		}
	}
}

// inputRound returns the input requests and requestState of res when it asks for
// input (ok false otherwise).
func inputRound(res mcp.Result) (mcp.InputRequestMap, string, bool) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if r != nil && r.InputRequests != nil {
			return r.InputRequests, r.RequestState, true
		}
	case *mcp.GetPromptResult:
		if r != nil && r.InputRequests != nil {
			return r.InputRequests, r.RequestState, true
		}
	case *mcp.ReadResourceResult:
		if r != nil && r.InputRequests != nil {
			return r.InputRequests, r.RequestState, true
		}
	}
	return nil, "", false
}

// retryOf returns the next round of req: a request on cs whose params are a shallow
// copy of req's with the answers and the state (req's own params untouched: they
// are the caller's).
func retryOf(req mcp.Request, cs *mcp.ClientSession, responses mcp.InputResponseMap, state string) (mcp.Request, error) {
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParams:
		cp := *p
		cp.InputResponses, cp.RequestState = responses, state
		return &mcp.ClientRequest[*mcp.CallToolParams]{Session: cs, Params: &cp}, nil
	case *mcp.CallToolParamsRaw:
		cp := *p
		cp.InputResponses, cp.RequestState = responses, state
		return &mcp.ClientRequest[*mcp.CallToolParamsRaw]{Session: cs, Params: &cp}, nil
	case *mcp.GetPromptParams:
		cp := *p
		cp.InputResponses, cp.RequestState = responses, state
		return &mcp.ClientRequest[*mcp.GetPromptParams]{Session: cs, Params: &cp}, nil
	case *mcp.ReadResourceParams:
		cp := *p
		cp.InputResponses, cp.RequestState = responses, state
		return &mcp.ClientRequest[*mcp.ReadResourceParams]{Session: cs, Params: &cp}, nil
	}
	return nil, fmt.Errorf("multi-round-trip: unsupported params type %T", req.GetParams())
}

// fulfil answers every input request of reqs through answer, at once; the first
// that fails cancels the others and is the error.
func fulfil(ctx context.Context, answer mcp.MethodHandler, cs *mcp.ClientSession, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		firstErr  error
		responses = make(mcp.InputResponseMap, len(reqs))
	)
	for id, ir := range reqs {
		wg.Go(func() {
			resp, err := fulfilOne(ctx, answer, cs, ir)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("fulfilling input request %q: %w", id, err)
					cancel()
				}
				return
			}
			responses[id] = resp
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, fmt.Errorf("multi round-trip: %w", firstErr)
	}
	return responses, nil
}

// fulfilOne answers one input request as the request of its method sent by the
// upstream on cs would be.
func fulfilOne(ctx context.Context, answer mcp.MethodHandler, cs *mcp.ClientSession, ir mcp.InputRequest) (mcp.InputResponse, error) {
	var (
		method string
		req    mcp.Request
	)
	switch p := ir.(type) {
	case *mcp.ElicitParams:
		method, req = "elicitation/create", &mcp.ElicitRequest{Session: cs, Params: p}
	case *mcp.CreateMessageWithToolsParams:
		method, req = "sampling/createMessage", &mcp.CreateMessageWithToolsRequest{Session: cs, Params: p}
	case *mcp.ListRootsParams:
		method, req = "roots/list", &mcp.ListRootsRequest{Session: cs, Params: p}
	default:
		// The SDK reads every sampling input request as CreateMessageWithToolsParams.
		return nil, fmt.Errorf("unknown input request type: %T", ir)
	}
	res, err := answer(ctx, method, req)
	if err != nil {
		return nil, err
	}
	resp, ok := res.(mcp.InputResponse)
	if !ok || resp == nil {
		return nil, errors.New("no answer of an input response's type")
	}
	return resp, nil
}
