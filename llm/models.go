package llm

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ModelsTimeout bounds one GET /models: the list is asked for before anything else
// happens, so a server that does not answer must not hold the program up.
const ModelsTimeout = 10 * time.Second

// modelsTTL is how long a server's list is reused within one process (the workbench's
// picker, agent files naming their models, every headless command's choice).
const modelsTTL = 5 * time.Minute

// Server is where an OpenAI-compatible API lives and how to talk to it.
type Server struct {
	BaseURL string
	APIKey  string
	KeyEnv  string // where the key came from, for hints
	Headers map[string]string
	Azure   bool // Azure OpenAI serves deployments, not a model list
}

type modelsEntry struct {
	models []string
	at     time.Time
}

var (
	modelsMu    sync.Mutex
	modelsCache = map[string]modelsEntry{}
)

// ListModels asks the server which models it serves (GET {base}/models), in the order it
// lists them. The answer is cached for a few minutes per server and key; failures are
// not cached. The call gives up after ModelsTimeout.
func ListModels(ctx context.Context, s Server) ([]string, error) {
	if s.Azure {
		return nil, errors.New("an Azure OpenAI endpoint lists deployments, not models: name the deployment with --model or in the provider's models")
	}
	registerSecrets(s.APIKey, s.Headers)
	sum := sha256.Sum256([]byte(s.APIKey))
	key := strings.TrimRight(s.BaseURL, "/") + "\x00" + string(sum[:])
	modelsMu.Lock()
	e, ok := modelsCache[key]
	modelsMu.Unlock()
	if ok && time.Since(e.at) < modelsTTL {
		return append([]string(nil), e.models...), nil
	}
	models, err := fetchModels(ctx, s)
	if err != nil {
		return nil, err
	}
	modelsMu.Lock()
	modelsCache[key] = modelsEntry{models: models, at: time.Now()}
	modelsMu.Unlock()
	return append([]string(nil), models...), nil
}

func fetchModels(ctx context.Context, s Server) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, ModelsTimeout)
	defer cancel()
	u := strings.TrimRight(s.BaseURL, "/") + "/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "sessionbench")
	if s.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
	}
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	tgt := target{baseURL: s.BaseURL, keyEnv: s.KeyEnv, hasKey: s.APIKey != ""}
	resp, err := newHTTPClient(ModelsTimeout).Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("GET %s: no answer within %s", u, ModelsTimeout)
		}
		return nil, fmt.Errorf("GET %s: %w", u, classifyTransport(err, tgt))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the answer: %w", u, err)
	}
	if resp.StatusCode/100 != 2 {
		e := classifyHTTP(resp.StatusCode, body, nil, tgt)
		if resp.StatusCode == http.StatusNotFound {
			e.Hint = "this server has no model list at " + u + "; name the model with --model NAME or SESSIONBENCH_MODEL"
		}
		return nil, fmt.Errorf("GET %s: %w", u, e)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		start := string(body)
		if len(start) > 120 {
			start = start[:120] + "…"
		}
		return nil, fmt.Errorf("GET %s: the answer is not an OpenAI model list (Content-Type %q, begins %q): %w",
			u, resp.Header.Get("Content-Type"), start, err)
	}
	models := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" {
			models = append(models, m.ID)
		}
	}
	return models, nil
}

// notChat marks model IDs that name embedding, speech, image or moderation models:
// servers list them beside the chat models, and they cannot answer a chat request.
var notChat = []string{"embed", "whisper", "tts", "dall-e", "moderation", "transcribe", "rerank", "image", "audio", "realtime",
	"davinci", "babbage", "search"}

// ChatModel picks the model a command takes when none is named: the first the server
// lists that does not look like an embedding, speech, image or moderation model (the
// first of all when every one does).
func ChatModel(models []string) string {
	for _, m := range models {
		l := strings.ToLower(m)
		chat := true
		for _, w := range notChat {
			if strings.Contains(l, w) {
				chat = false
				break
			}
		}
		if chat {
			return m
		}
	}
	if len(models) > 0 {
		return models[0]
	}
	return ""
}
