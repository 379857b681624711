package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/ui/termtext/termtexttest"
)

// hostileServer is an OpenAI-compatible server whose every text is the hostile payload:
// the model names it lists, the answers it streams or sends whole, and, with status
// 401, an error body quoting it.
func hostileServer(t *testing.T, status int) *httptest.Server {
	t.Helper()
	quoted, _ := json.Marshal(termtexttest.Payload)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case status != 200:
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error"}}`, quoted)
		case strings.HasSuffix(r.URL.Path, "/models"):
			fmt.Fprintf(w, `{"object":"list","data":[{"id":"chat-model","object":"model"},{"id":%s,"object":"model"}]}`, quoted)
		case strings.Contains(r.Header.Get("Accept"), "event-stream") || bytes.Contains(readBody(r), []byte(`"stream":true`)):
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\n", quoted)
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"chat-model","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}]}`, quoted)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func readBody(r *http.Request) []byte {
	var b bytes.Buffer
	_, _ = b.ReadFrom(r.Body)
	return b.Bytes()
}

// hostileDB stores a conversation whose title, agent, inputs, outputs, call errors,
// completions and attempt summaries are the payload, with a failed turn kept beside it.
func hostileDB(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	p := termtexttest.Payload
	path := filepath.Join(t.TempDir(), "hostile.db")
	s, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateConversation(ctx, storage.NewConversation{ID: "c1", Title: "title " + p, Agent: "agent " + p,
		Metadata: map[string]any{"note": p}}); err != nil {
		t.Fatal(err)
	}
	call := func(errText string) *trace.Call {
		return &trace.Call{ID: "k1", Path: "reply " + p, PredictorType: "Predict", Inputs: sig.NewMap("question", p),
			Outputs: sig.NewMap("reply", p), Messages: lm.MessagesOf([]lm.Message{{Role: "user", Content: p}}), Completion: p, Error: errText}
	}
	turn := &trace.Turn{Inputs: sig.NewMap("question "+p, p), Outputs: sig.NewMap("reply", p), Calls: []*trace.Call{call("")},
		Attempts: []*trace.Attempt{{Step: "step " + p, N: 1, Score: 0.5, Summary: p, Best: true}}}
	if _, err := s.AppendTurn(ctx, "c1", storage.MainBranch, turn); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every text a command prints, on standard output (a terminal) and standard error,
// carries no control sequence, control character, bidi override or invalid UTF-8, even
// when every model, file, server and stored text is the hostile payload; the payload
// still shows, in its visible form.
func TestEveryTextOutputIsEscapeFree(t *testing.T) {
	cfg := isolate(t)
	db := hostileDB(t)
	srv := hostileServer(t, 200)
	bad := hostileServer(t, 401)
	p := termtexttest.Payload
	agents := filepath.Join(cfg, "sessionbench", "agents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	tq := tomlQuote(p)
	agentFile := filepath.Join(agents, "hostile.toml")
	if err := os.WriteFile(agentFile, []byte("name = \"hostile\"\ndescription = "+tq+
		"\ninputs = [\"question\"]\noutputs = [\"reply\"]\n\n[[predictors]]\nname = \"reply\"\nsignature = \"question -> reply\"\ninstructions = "+
		tq+"\n\n[[steps]]\nname = \"reply\"\npredictor = \"reply\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, cfg, "[[providers]]\nname = \"good\"\nbase_url = \""+srv.URL+"\"\nmodels = [\"chat-model\"]\n\n"+
		"[[providers]]\nname = \"bad\"\nbase_url = \""+bad.URL+"\"\n")
	quoted, _ := json.Marshal(p)
	// A broken agent file whose name is hostile: agents ls reports it, check and import
	// name it.
	badName := filepath.Join(agents, "evil\x1b]0;title\x07\u202Egnp.toml")
	if err := os.WriteFile(badName, []byte("name = [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "script.jsonl")
	if err := os.WriteFile(script, []byte(`{"question":`+string(quoted)+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wireReq := `{"adapter":"chat","signature":{"instructions":` + string(quoted) + `,"inputs":[{"name":"q","type":"str"}],` +
		`"outputs":[{"name":"a","type":"int"}]},"inputs":{"q":` + string(quoted) + `},"completion":` + string(quoted) + `}`
	cases := []struct {
		name  string
		stdin string
		args  []string
	}{
		{"ask streams", "", []string{"ask", "--base-url", srv.URL, "--model", "chat-model", "hi"}},
		{"ask whole", "", []string{"ask", "--base-url", srv.URL, "--model", "chat-model", "--no-stream", "hi"}},
		{"ask server error", "", []string{"ask", "--base-url", bad.URL, "--model", "chat-model", "hi"}},
		{"models", "", []string{"models"}},
		{"session ls", "", []string{"session", "ls", "--db", db}},
		{"session show", "", []string{"session", "show", "c1", "--db", db}},
		{"session show tree", "", []string{"session", "show", "c1", "--tree", "--db", db}},
		{"session show unknown", "", []string{"session", "show", p, "--db", db}},
		{"export markdown", "", []string{"export", "c1", "--format", "markdown", "--db", db}},
		{"export session-json", "", []string{"export", "c1", "--format", "session-json", "--db", db}},
		{"export calls", "", []string{"export", "c1", "--format", "calls", "--db", db}},
		{"agents ls", "", []string{"agents", "ls"}},
		{"agents show", "", []string{"agents", "show", "hostile"}},
		{"agents check bad name", "", []string{"agents", "check", badName}},
		{"import bad name", "", []string{"import", badName, "--db", filepath.Join(t.TempDir(), "i.db")}},
		{"run", "", []string{"run", "--agent", "hostile", "--base-url", srv.URL, "--model", "chat-model", "--input", "question=" + p, "--db", filepath.Join(t.TempDir(), "r.db")}},
		{"run script", "", []string{"run", "--agent", "hostile", "--base-url", srv.URL, "--model", "chat-model", "--script", script, "--db", filepath.Join(t.TempDir(), "s.db")}},
		{"wire format", wireReq, []string{"wire", "format"}},
		{"wire parse", wireReq, []string{"wire", "parse"}},
		{"unknown command", "", []string{p}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), Env{Args: c.args, Stdin: strings.NewReader(c.stdin), Stdout: &out, Stderr: &errb, Terminal: true})
			all := out.String() + errb.String()
			for _, pr := range termtexttest.Problems(all, false) {
				t.Errorf("exit %d: %s\nstdout:\n%s\nstderr:\n%s", code, pr, out.String(), errb.String())
			}
			// The payload reached the output, visibly (sanitised, or quoted by %q or
			// JSON): the test cannot pass on an output that lacks it.
			if !strings.Contains(all, "␛]") && !strings.Contains(all, "⟨RLO⟩") && !strings.Contains(all, `\x1b]`) && !strings.Contains(all, `\u001b]`) {
				t.Errorf("exit %d: no visible trace of the payload:\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
			}
		})
	}
}

// --json output is valid JSON whose strings carry the payload exactly, written with
// escapes only: nothing in it can act on a terminal, in a pipe or on one.
func TestJSONOutputIsEscapedAndExact(t *testing.T) {
	cfg := isolate(t)
	db := hostileDB(t)
	srv := hostileServer(t, 200)
	writeConfig(t, cfg, "[[providers]]\nname = \"good\"\nbase_url = \""+srv.URL+"\"\n")
	cases := [][]string{
		{"ask", "--json", "--base-url", srv.URL, "--model", "chat-model", "hi"},
		{"models", "--json"},
		{"session", "ls", "--json", "--db", db},
		{"session", "show", "c1", "--json", "--db", db},
		{"export", "c1", "--format", "session-json", "--db", db},
		{"export", "c1", "--format", "calls", "--db", db},
	}
	for _, args := range cases {
		for _, terminal := range []bool{false, true} {
			if args[0] == "export" && !terminal {
				continue // piped, an export is its exact bytes (TestPipedOutputKeepsTheBytes)
			}
			var out, errb bytes.Buffer
			code := Main(context.Background(), Env{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Terminal: terminal})
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, errb.String())
			}
			for _, pr := range termtexttest.Problems(out.String(), false) {
				t.Errorf("%v (terminal %v): %s", args, terminal, pr)
			}
			var v any
			dec := json.NewDecoder(&out)
			for dec.More() { // JSONL: the last line's value is checked
				if err := dec.Decode(&v); err != nil {
					t.Errorf("%v (terminal %v): not JSON: %v", args, terminal, err)
					break
				}
			}
			want := viaJSON(termtexttest.Payload)
			if args[0] == "models" {
				want = "before" // a model name: one line
			}
			if !containsString(v, want) {
				t.Errorf("%v (terminal %v): the payload is not in the JSON exactly:\n%s", args, terminal, out.String())
			}
		}
	}
}

// containsString reports whether a decoded JSON value holds s in one of its strings.
func containsString(v any, s string) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, s)
	case []any:
		for _, x := range t {
			if containsString(x, s) {
				return true
			}
		}
	case map[string]any:
		for _, x := range t {
			if containsString(x, s) {
				return true
			}
		}
	}
	return false
}

// Piped standard output keeps the exact bytes (it is data, like --out); standard error
// is sanitised always.
func TestPipedOutputKeepsTheBytes(t *testing.T) {
	isolate(t)
	srv := hostileServer(t, 200)
	var out, errb bytes.Buffer
	code := Main(context.Background(), Env{Args: []string{"ask", "--base-url", srv.URL, "--model", "chat-model", "hi"},
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := viaJSON(termtexttest.Payload) + "\n"; out.String() != want {
		t.Errorf("piped answer changed:\n got %q\nwant %q", out.String(), want)
	}
	bad := filepath.Join(t.TempDir(), "evil\x1b]0;title\x07\u202Egnp.json")
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out2, errb2 bytes.Buffer
	Main(context.Background(), Env{Args: []string{"import", bad, "--db", filepath.Join(t.TempDir(), "x.db")}, Stdout: &out2, Stderr: &errb2})
	if pr := termtexttest.Problems(errb2.String(), false); len(pr) > 0 || !strings.Contains(errb2.String(), "⟨RLO⟩") {
		t.Errorf("standard error not sanitised (%v):\n%s", pr, errb2.String())
	}
}

// viaJSON is s as it comes out of a JSON string: invalid UTF-8 has no JSON form, so a
// server's JSON (and Go's encoder) carries U+FFFD for each bad byte.
func viaJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

// tomlQuote writes s as a TOML basic string: every control as a \u escape (TOML allows
// none raw, DEL included), invalid UTF-8 as U+FFFD.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteString("\\" + string(r))
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
