// Package adapter turns a signature plus values into chat messages and parses a model's
// completion back into typed output values. ChatAdapter and JSONAdapter reproduce DSPy
// 3.3.1 byte for byte (see docs/wire/chat-adapter-format.md).
package adapter

import (
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// Request is what an adapter renders.
type Request struct {
	Signature *sig.Signature
	Demos     []*sig.Map
	// Inputs holds the call's input values; the history field, when present, holds a
	// sig.History. An absent key means "not passed" (no section is written).
	Inputs *sig.Map
	// OuterHistory is the enclosing session's history (for template strategies 4 and 5).
	OuterHistory *sig.History
	// Cache, when set, keeps what the next request repeats of this one (RequestCache):
	// the caller's, one per predictor. The ChatAdapter and the JSONAdapter use it; the
	// template adapter renders its history through its template and ignores it.
	Cache *RequestCache
}

// Adapter renders requests and parses completions.
type Adapter interface {
	// Name is "chat", "json" or "template".
	Name() string
	Format(req Request) ([]lm.Message, error)
	Parse(s *sig.Signature, completion string) (*sig.Map, error)
}

// FormatList formats req with a as a list. Chat and JSON (these types exactly: a type
// embedding one to change its Format is formatted by its own Format) make it sharing
// runs with the predictor's other requests through req.Cache (RequestCache), when req
// has one (shared): a long history's request then costs its new messages, not its
// length. Other adapters' messages are a run of their own.
func FormatList(a Adapter, req Request) (l lm.MessageList, shared bool, err error) {
	if st, ok := styleOf(a); ok {
		l, err = formatList(st, req)
		return l, req.Cache != nil && err == nil, err
	}
	msgs, err := a.Format(req)
	if err != nil {
		return lm.MessageList{}, false, err
	}
	return lm.ListOf(msgs), false, nil
}

// styleOf is the style of Chat and JSON (those types exactly, as FormatList), or false.
func styleOf(a Adapter) (style, bool) {
	switch a.(type) {
	case Chat, *Chat:
		return chatStyle{}, true
	case JSON, *JSON:
		return jsonStyle{}, true
	}
	return nil, false
}

// HistoryList is the run of messages FormatList(a, req) writes for req's history,
// through req.Cache as FormatList does; ok is false for an adapter other than Chat and
// JSON. With FormatAround it makes the request again from the history as rendered.
func HistoryList(a Adapter, req Request) (l lm.MessageList, ok bool, err error) {
	st, ok := styleOf(a)
	if !ok {
		return lm.MessageList{}, false, nil
	}
	_, turnSig, h, err := requestHistory(req)
	if err != nil {
		return lm.MessageList{}, true, err
	}
	return req.Cache.historyList(st, turnSig, h), true, nil
}

// FormatAround is FormatList(a, req) with req's history given as its messages, as
// HistoryList rendered them (req's inputs hold no history): the same messages, for a
// request made without the history's entries (ui/sessions/speculate.go). ok is false
// for an adapter other than Chat and JSON.
func FormatAround(a Adapter, req Request, hist lm.MessageList) (l lm.MessageList, ok bool, err error) {
	st, ok := styleOf(a)
	if !ok {
		return lm.MessageList{}, false, nil
	}
	s, turnSig, _, err := requestHistory(req)
	if err != nil {
		return lm.MessageList{}, true, err
	}
	return around(st, req, s, turnSig, hist), true, nil
}
