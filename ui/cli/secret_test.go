package cli

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/storage"
)

// keyEchoServer refuses every request with a 401 whose body quotes the key it got, as
// some servers do, and lists no models.
func keyEchoServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s. Also seen: sk-proj-ZZZZZZZZZZZZZZZZZZZZZZZZ","type":"invalid_request_error"}}`, key)
	}))
	t.Cleanup(s.Close)
	return s
}

// dumpDB is every value of every table of the database as text.
func dumpDB(t *testing.T, path string) string {
	t.Helper()
	s, err := storage.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, tb := range tables {
		rs, err := db.Query(`SELECT * FROM "` + tb + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rs.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rs.Next() {
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				fmt.Fprintf(&b, "%s\n", v)
			}
		}
		rs.Close()
	}
	return b.String()
}

// A key a server quotes back in its error reaches no output and no table: ask, models,
// run (the failed turn keeps its call's error, tries and response, redacted) and
// session show; sk-shaped tokens are redacted too, whoever's they are.
func TestKeysNeverShownOrStored(t *testing.T) {
	isolate(t)
	srv := keyEchoServer(t)
	for _, key := range []string{"sk-test-0123456789abcdefghij", "local-secret-key-xyz"} {
		t.Run(key, func(t *testing.T) {
			t.Setenv("OPENAI_BASE_URL", srv.URL)
			t.Setenv("OPENAI_API_KEY", key)
			db := filepath.Join(t.TempDir(), "k.db")
			var all strings.Builder
			for _, args := range [][]string{
				{"ask", "--model", "m", "hi"},
				{"models"},
				{"run", "--agent", "SupportAgent", "--model", "m", "--input", "question=hi", "--db", db},
				{"session", "ls", "--db", db},
			} {
				code, out, errOut := run(t, "", args...)
				all.WriteString(out + errOut)
				if args[0] == "ask" && (code != 1 || !strings.Contains(errOut, "Incorrect API key provided: [key redacted]")) {
					t.Errorf("ask: exit %d, stderr %q", code, errOut)
				}
			}
			stored := dumpDB(t, db)
			if !strings.Contains(stored, "Incorrect API key provided: [key redacted]") {
				t.Errorf("the failed call's error is not stored redacted:\n%.2000s", stored)
			}
			for _, secret := range []string{key, "sk-proj-ZZZZ"} {
				if strings.Contains(all.String(), secret) {
					t.Errorf("%q was shown:\n%s", secret, all.String())
				}
				if strings.Contains(stored, secret) {
					t.Errorf("%q was stored", secret)
				}
			}
		})
	}
}

// A configuration file holding a credential that others can read gets a warning with
// the chmod that fixes it; a private one, or one without credentials, gets none.
func TestConfigHoldingAKeyReadableByOthersWarns(t *testing.T) {
	cases := []struct {
		name, text string
		mode       os.FileMode
		warn       string // "" for none
	}{
		{"header, 0644", "[[providers]]\nname = \"p\"\nbase_url = \"http://127.0.0.1:1\"\nheaders = { Authorization = \"Bearer abcdefghijkl\" }\n",
			0o644, "holds a credential in providers[1].headers.Authorization and other users can read it (mode 0644); make it private: chmod 600 "},
		{"key in key_command, 0640", "[[providers]]\nname = \"p\"\nbase_url = \"http://127.0.0.1:1\"\nkey_command = \"echo sk-abcdefghijklmnopqrstu\"\n",
			0o640, "holds an API key on line 4 and other users can read it (mode 0640)"},
		{"header, 0600", "[[providers]]\nname = \"p\"\nbase_url = \"http://127.0.0.1:1\"\nheaders = { Authorization = \"Bearer abcdefghijkl\" }\n", 0o600, ""},
		{"no credential, 0644", "[[providers]]\nname = \"p\"\nbase_url = \"http://127.0.0.1:1\"\napi_key_env = \"P_KEY\"\n", 0o644, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := isolate(t)
			path := writeConfig(t, dir, c.text)
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			_, _, errOut := run(t, "", "models")
			switch {
			case c.warn == "" && strings.Contains(errOut, "warning"):
				t.Errorf("unexpected warning: %s", errOut)
			case c.warn != "" && !strings.Contains(errOut, "sessionbench: warning: "+path+" "+c.warn):
				t.Errorf("want warning %q, got:\n%s", c.warn, errOut)
			}
			if strings.Contains(errOut, "abcdefghijkl") {
				t.Errorf("the warning shows the key:\n%s", errOut)
			}
		})
	}
}
