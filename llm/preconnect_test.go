package llm

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
)

// connCounter counts the connections a test server accepted and the requests it saw
// by method.
type connCounter struct {
	mu      sync.Mutex
	conns   int
	methods map[string]int
	headers []http.Header
}

func (c *connCounter) state(_ net.Conn, st http.ConnState) {
	if st == http.StateNew {
		c.mu.Lock()
		c.conns++
		c.mu.Unlock()
	}
}

func (c *connCounter) seen() (conns int, methods map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]int{}
	for k, v := range c.methods {
		m[k] = v
	}
	return c.conns, m
}

// Preconnect opens the connection the next call uses (one connection in all, the call
// dials none), with a HEAD that carries no key; right after a call or another
// Preconnect it sends nothing; and a server that cannot be reached is left for the call
// to report.
func TestPreconnect(t *testing.T) {
	cc := &connCounter{methods: map[string]int{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cc.mu.Lock()
		cc.methods[r.Method]++
		cc.headers = append(cc.headers, r.Header.Clone())
		cc.mu.Unlock()
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		writeCompletion(w, "ok", 0)
	}))
	srv.Config.ConnState = cc.state
	srv.Start()
	t.Cleanup(srv.Close)
	s := &chatServer{Server: srv}
	m := newTestLM(t, s, nil)
	ctx := context.Background()

	m.Preconnect(ctx)
	if conns, methods := cc.seen(); conns != 1 || methods[http.MethodHead] != 1 {
		t.Fatalf("after Preconnect: %d connections, %v requests; want 1 and one HEAD", conns, methods)
	}
	if h := cc.headers[0]; h.Get("Authorization") != "" || h.Get("Api-Key") != "" {
		t.Errorf("the HEAD carried a key: %v", h)
	}
	if _, err := m.Call(ctx, lm.Request{Messages: lm.ListOf(twoMessages)}); err != nil {
		t.Fatal(err)
	}
	if conns, _ := cc.seen(); conns != 1 {
		t.Errorf("the call after Preconnect opened a connection of its own (%d in all)", conns)
	}
	m.Preconnect(ctx) // the call just used the server
	if _, methods := cc.seen(); methods[http.MethodHead] != 1 {
		t.Errorf("Preconnect right after a call sent a HEAD (%d in all)", methods[http.MethodHead])
	}

	// a server no longer there: Preconnect returns, quietly
	gone := newTestLM(t, s, func(o *OpenAIOptions) { o.BaseURL = "http://127.0.0.1:1/v1" })
	done := make(chan struct{})
	go func() { gone.Preconnect(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Preconnect to a closed port did not return")
	}
}
