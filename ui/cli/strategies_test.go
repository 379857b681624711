package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/wirediff"
	"github.com/sessionbench/sessionbench/llm"
)

// runStrategiesCLI runs `wire strategies ARGS` through Main, as the other command tests do.
func runStrategiesCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := Env{Args: append([]string{"wire", "strategies"}, args...), Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb}
	code = Main(context.Background(), env)
	return code, out.String(), errb.String()
}

func runStrategiesJSON(t *testing.T, stdin string, args ...string) strategiesOut {
	t.Helper()
	code, stdout, stderr := runStrategiesCLI(t, stdin, append([]string{"--json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out strategiesOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("--json output does not parse back: %v\n%s", err, stdout)
	}
	return out
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/strategies/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func findPredictor(t *testing.T, out strategiesOut, path string) predictorOut {
	t.Helper()
	for _, p := range out.Predictors {
		if p.Path == path {
			return p
		}
	}
	t.Fatalf("no predictor %q in the output", path)
	return predictorOut{}
}

func findStrategy(t *testing.T, p predictorOut, n int) strategyOut {
	t.Helper()
	for _, s := range p.Strategies {
		if s.Number == n {
			return s
		}
	}
	t.Fatalf("%s: no strategy %d in the output", p.Path, n)
	return strategyOut{}
}

func messagesOf(s strategyOut) []lm.Message {
	out := make([]lm.Message, len(s.Messages))
	for i, m := range s.Messages {
		out[i] = lm.Message{Role: m.Role, Content: m.Content}
	}
	return out
}

func rolesOf(ms []lm.Message) string {
	r := make([]string, len(ms))
	for i, m := range ms {
		r[i] = m.Role
	}
	return strings.Join(r, ",")
}

func sameMessages(t *testing.T, what string, got, want []lm.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages (%s), want %d (%s)", what, len(got), rolesOf(got), len(want), rolesOf(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: message %d\n got %s %q\nwant %s %q", what, i, got[i].Role, got[i].Content, want[i].Role, want[i].Content)
		}
	}
}

func mustSig(t *testing.T, text, instructions string) *sig.Signature {
	t.Helper()
	s, err := sig.ParseWith(text, instructions)
	if err != nil {
		t.Fatal(err)
	}
	return withHistory(s)
}

func history(msgs ...*sig.Map) sig.History { return sig.History{Messages: msgs} }

// Scenario B of seed 000 §6 (testdata/strategies/correct_translate.json): two predictors
// with no field overlap, two prior turns.
var (
	outerB = history(
		sig.NewMap("text", "This plant is red", "corrected", "This plant is red.", "translated", "Cette plante est rouge."),
		sig.NewMap("text", "Can I have it?", "corrected", "Can I have it?", "translated", "Puis-je l'avoir ?"))
	correctorOwnB = history(
		sig.NewMap("text", "This plant is red", "corrected", "This plant is red."),
		sig.NewMap("text", "Can I have it?", "corrected", "Can I have it?"))
	translatorOwnB = history(
		sig.NewMap("corrected", "This plant is red.", "target_language", "French", "translated", "Cette plante est rouge."),
		sig.NewMap("corrected", "Can I have it?", "target_language", "French", "translated", "Puis-je l'avoir ?"))
)

// TestWireStrategiesScenarioB checks every strategy of both predictors against what
// core/template (and, for 1 and 2, ChatAdapter) renders for hand-built histories: keep
// strategies must carry the predictor's own calls, inherit ones the outer turns.
func TestWireStrategiesScenarioB(t *testing.T) {
	out := runStrategiesJSON(t, readTestdata(t, "correct_translate.json"))
	outerSig, _ := sig.Parse("text -> translated")
	preds := []struct {
		path    string
		sig     *sig.Signature
		now     *sig.Map
		own     sig.History
		mapping *core.Mapping
	}{
		{"corrector", mustSig(t, "text -> corrected", "Correct grammar and spelling in the input sentence."),
			sig.NewMap("text", "No it to precious, I want to keep it."), correctorOwnB, &core.Mapping{User: "{text}", Assistant: "{corrected}"}},
		{"translator", mustSig(t, "corrected, target_language -> translated", "Translate corrected text into the target language."),
			sig.NewMap("corrected", "No, it's too precious. I want to keep it.", "target_language", "French"), translatorOwnB, nil},
	}
	cases := []struct {
		n      int
		roles  string
		source string
	}{
		{1, "system,user,assistant,user,assistant,user", "own"},
		{2, "system,user,assistant,user,assistant,user", "outer"},
		{3, "system,user", "outer"},
		{4, "system,user,assistant,user,assistant,user", "outer"},
		{5, "system,user,assistant,user,assistant,user", "own+outer"},
	}
	if len(out.Predictors) != len(preds) {
		t.Fatalf("%d predictors in the output, want %d", len(out.Predictors), len(preds))
	}
	for _, p := range preds {
		po := findPredictor(t, out, p.path)
		if po.Signature != p.sig.String() || po.Type != "Predict" {
			t.Errorf("%s: signature %q type %q, want %q Predict", p.path, po.Signature, po.Type, p.sig.String())
		}
		for _, c := range cases {
			t.Run(p.path+"/"+c.source+"/"+string(rune('0'+c.n)), func(t *testing.T) {
				so := findStrategy(t, po, c.n)
				got := messagesOf(so)
				if r := rolesOf(got); r != c.roles {
					t.Fatalf("roles %s, want %s", r, c.roles)
				}
				if so.History.Source != c.source || so.History.Turns != 2 || so.History.Truncated != 0 {
					t.Errorf("history %+v, want %s with 2 turns", so.History, c.source)
				}
				if so.Name != core.StrategyName(c.n) || so.Error != "" {
					t.Errorf("name %q error %q", so.Name, so.Error)
				}
				hist := p.own
				if c.source == "outer" {
					hist = outerB
				}
				in := p.now.Clone()
				in.Set("history", hist)
				st, err := core.Preset(c.n, p.sig, core.PresetOptions{Outer: outerSig, Mapping: p.mapping})
				if err != nil {
					t.Fatal(err)
				}
				if so.Policy != st.Policy() || so.Adapter != st.Adapter.Name() {
					t.Errorf("policy %q adapter %q, want %q %q", so.Policy, so.Adapter, st.Policy(), st.Adapter.Name())
				}
				outer := outerB
				req := adapter.Request{Signature: p.sig, Inputs: in, OuterHistory: &outer}
				want, err := st.Adapter.Format(req)
				if err != nil {
					t.Fatal(err)
				}
				sameMessages(t, "core/template", got, want)
				if c.n <= 2 {
					chat, err := adapter.Chat{}.Format(req)
					if err != nil {
						t.Fatal(err)
					}
					sameMessages(t, "ChatAdapter", got, chat)
				}
				checkTokens(t, so, got, "")
			})
		}
	}
}

// checkTokens: every message has tokens, they sum with the reply priming to the request
// total, and they are what llm.CountTokens says for the model.
func checkTokens(t *testing.T, so strategyOut, msgs []lm.Message, model string) {
	t.Helper()
	per, total, err := llm.CountTokens(model, msgs)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for i, m := range so.Messages {
		if m.Tokens <= 0 || m.Tokens != per[i] {
			t.Errorf("message %d: %d tokens, want %d (> 0)", i, m.Tokens, per[i])
		}
		sum += m.Tokens
	}
	if so.Tokens != total || sum+llm.TokensReplyPrime != so.Tokens {
		t.Errorf("request %d tokens, messages sum to %d (+%d), CountTokens says %d", so.Tokens, sum, llm.TokensReplyPrime, total)
	}
}

// TestWireStrategiesSeedText compares renderings with the seed's text (seed 000 §6, as
// corrected in core/template's scenario tests: the history directive writes "name: value"
// user turns).
func TestWireStrategiesSeedText(t *testing.T) {
	u := func(c string) lm.Message { return lm.Message{Role: "user", Content: c} }
	a := func(c string) lm.Message { return lm.Message{Role: "assistant", Content: c} }
	sy := func(c string) lm.Message { return lm.Message{Role: "system", Content: c} }
	ctxA := "- turn: 1\n  question: I can't log in\n  reply: Try resetting your password.\n  intent: technical"
	ctxB := "- turn: 1\n  text: This plant is red\n  corrected: This plant is red.\n  translated: Cette plante est rouge.\n" +
		"- turn: 2\n  text: Can I have it?\n  corrected: Can I have it?\n  translated: Puis-je l'avoir ?"
	outA := runStrategiesJSON(t, readTestdata(t, "support_agent.json"))
	outB := runStrategiesJSON(t, readTestdata(t, "correct_translate.json"))
	cases := []struct {
		name string
		out  strategiesOut
		path string
		n    int
		want []lm.Message
	}{
		{"A3 classify", outA, "classify", 3, []lm.Message{
			sy("Classify the customer's intent.\n\nPrior conversation for context:\n" + ctxA),
			u("The reset email never arrives")}},
		{"A4 classify", outA, "classify", 4, []lm.Message{
			sy("Classify the customer's intent."),
			u("I can't log in"), a("Try resetting your password."),
			u("The reset email never arrives")}},
		{"A4 respond", outA, "respond", 4, []lm.Message{
			sy("Generate a helpful support reply."),
			u("I can't log in"), a("Try resetting your password."),
			u("question: The reset email never arrives\nintent: technical")}},
		{"A5 classify", outA, "classify", 5, []lm.Message{
			sy("Classify the customer's intent.\n\nFull conversation context:\n" + ctxA),
			u("question: I can't log in"), a("technical"),
			u("The reset email never arrives")}},
		{"B3 translator", outB, "translator", 3, []lm.Message{
			sy("Translate corrected text into the target language.\n\nPrior conversation for context:\n" + ctxB),
			u("corrected: No, it's too precious. I want to keep it.\ntarget_language: French")}},
		// The corrector's mapping is the seed's {text} -> {corrected}; the translator
		// keeps the default, the outer {text} -> {translated}.
		{"B4 corrector", outB, "corrector", 4, []lm.Message{
			sy("Correct grammar and spelling in the input sentence."),
			u("This plant is red"), a("This plant is red."),
			u("Can I have it?"), a("Can I have it?"),
			u("No it to precious, I want to keep it.")}},
		{"B4 translator", outB, "translator", 4, []lm.Message{
			sy("Translate corrected text into the target language."),
			u("This plant is red"), a("Cette plante est rouge."),
			u("Can I have it?"), a("Puis-je l'avoir ?"),
			u("corrected: No, it's too precious. I want to keep it.\ntarget_language: French")}},
		{"B5 translator", outB, "translator", 5, []lm.Message{
			sy("Translate corrected text into the target language.\n\nFull conversation context:\n" + ctxB),
			u("corrected: This plant is red.\ntarget_language: French"), a("Cette plante est rouge."),
			u("corrected: Can I have it?\ntarget_language: French"), a("Puis-je l'avoir ?"),
			u("corrected: No, it's too precious. I want to keep it.\ntarget_language: French")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			so := findStrategy(t, findPredictor(t, c.out, c.path), c.n)
			sameMessages(t, "seed", messagesOf(so), c.want)
		})
	}
	// Scenario A strategy 1: the seed's ChatAdapter turns (question -> intent pairs).
	s1 := messagesOf(findStrategy(t, findPredictor(t, outA, "classify"), 1))
	if s1[1].Content != "[[ ## question ## ]]\nI can't log in" || !strings.HasPrefix(s1[2].Content, "[[ ## intent ## ]]\ntechnical\n\n[[ ## completed ## ]]") {
		t.Errorf("A1 classify history turn: %q / %q", s1[1].Content, s1[2].Content)
	}
	if !strings.Contains(s1[0].Content, "1. `intent` (str): One of: billing, technical, general") {
		t.Errorf("A1 classify: the object-form signature's description is lost:\n%s", s1[0].Content)
	}
	if outA.Model != "gpt-4o-mini" || outA.Encoding != "o200k_base" {
		t.Errorf("model %q encoding %q", outA.Model, outA.Encoding)
	}
}

// worstB is Scenario B when the outer module returns only `translated` (seed 000 §6,
// "Even worse case"), with a window of one turn on the translator's own history and a
// corrector mapping that names a key no outer turn has.
const worstB = `{
  "agent": {"signature": "text -> translated", "predictors": [
    {"path": "corrector", "signature": "text -> corrected", "mapping": {"user": "{text}", "assistant": "{fixed}"}},
    {"path": "translator", "signature": "corrected, target_language -> translated", "max_turns": 1}]},
  "turns": [
    {"inputs": {"text": "This plant is red"}, "outputs": {"translated": "Cette plante est rouge."},
     "calls": [{"path": "translator", "inputs": {"corrected": "This plant is red.", "target_language": "French"}, "outputs": {"translated": "Cette plante est rouge."}}]},
    {"inputs": {"text": "Can I have it?"}, "outputs": {"translated": "Puis-je l'avoir ?"},
     "calls": [{"path": "translator", "inputs": {"corrected": "Can I have it?", "target_language": "French"}, "outputs": {"translated": "Puis-je l'avoir ?"}}]}],
  "current": {"inputs": {"text": "No it to precious"}, "calls": {"translator": {"corrected": "No, it's too precious."}}}
}`

func TestWireStrategiesLint(t *testing.T) {
	out := runStrategiesJSON(t, worstB)
	type want struct {
		path    string
		n       int
		kind    string
		message int
		field   string
	}
	cases := []want{
		// Outer entries lack `corrected`: the corrector's replies read None.
		{"corrector", 2, wirediff.MissingOutput, 2, "corrected"},
		{"corrector", 2, wirediff.MissingOutput, 4, "corrected"},
		// ... and have none of the translator's inputs: user turns dropped, replies adjacent.
		{"translator", 2, wirediff.DroppedUser, 1, ""},
		{"translator", 2, wirediff.DroppedUser, 2, ""},
		{"translator", 2, wirediff.ConsecutiveAssistant, 2, ""},
		// {fixed} is in no outer entry: it reaches the wire as written.
		{"corrector", 4, wirediff.UnresolvedPlaceholder, 2, "fixed"},
		{"corrector", 4, wirediff.UnresolvedPlaceholder, 4, "fixed"},
		// max_turns 1 on the translator cuts its own first call.
		{"translator", 1, wirediff.Truncated, -1, ""},
		{"translator", 5, wirediff.Truncated, -1, ""},
		// target_language is not given this turn.
		{"translator", 1, MissingInput, 3, "target_language"},
		{"translator", 3, MissingInput, 1, "target_language"},
	}
	for _, c := range cases {
		so := findStrategy(t, findPredictor(t, out, c.path), c.n)
		found := false
		for _, l := range so.Lint {
			found = found || (l.Kind == c.kind && l.Message == c.message && l.Field == c.field && l.Text != "")
		}
		if !found {
			t.Errorf("%s strategy %d: no %s warning at message %d field %q; got %+v", c.path, c.n, c.kind, c.message, c.field, so.Lint)
		}
	}
	// Strategy 1 of the translator sees only its last call; strategy 4 has nothing to warn
	// about but the missing input.
	s1 := findStrategy(t, findPredictor(t, out, "translator"), 1)
	if s1.History.Turns != 1 || s1.History.Truncated != 1 || rolesOf(messagesOf(s1)) != "system,user,assistant,user" {
		t.Errorf("translator strategy 1: history %+v roles %s", s1.History, rolesOf(messagesOf(s1)))
	}
	for _, l := range findStrategy(t, findPredictor(t, out, "translator"), 4).Lint {
		if l.Kind != MissingInput {
			t.Errorf("translator strategy 4: unexpected warning %+v", l)
		}
	}
	// The readable form prints the same warnings.
	code, stdout, stderr := runStrategiesCLI(t, worstB, "--path", "translator", "--strategies", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, s := range []string{
		"warning: message 1: history turn 1 has none of the input fields [corrected, target_language], so its user message is left out [dropped-user]",
		"warning: message 2: messages 1 and 2 are both assistant messages [consecutive-assistant]",
		"warning: message 3 field target_language: input \"target_language\" has no value this turn",
	} {
		if !strings.Contains(stdout, s) {
			t.Errorf("readable output lacks %q:\n%s", s, stdout)
		}
	}
}

func TestWireStrategiesReadable(t *testing.T) {
	code, stdout, stderr := runStrategiesCLI(t, "", "testdata/strategies/support_agent.json", "--strategies", "1,4", "--model", "gpt-4")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, s := range []string{
		"tokens: cl100k_base (gpt-4)\n",
		"\n=== classify (Predict) question, history: History -> intent\n",
		"\n--- strategy 1: per-predictor | policy keep | chat adapter | history: own, 1 turn\n",
		"\n--- strategy 4: outer field mapping | policy inherit | template adapter | history: outer, 1 turn\n",
		"\n[1] user (",
		"\n    [[ ## question ## ]]\n    I can't log in\n",
		"\n[2] assistant (",
		"\n    Try resetting your password.\n",
		"=== respond (Predict) question, intent, history: History -> reply",
	} {
		if !strings.Contains(stdout, s) {
			t.Errorf("readable output lacks %q", s)
		}
	}
	if strings.Contains(stdout, "strategy 2:") || strings.Count(stdout, "\nrequest: ") != 4 {
		t.Errorf("want strategies 1 and 4 of two predictors (4 requests):\n%s", stdout)
	}
	// The JSON form of the same run agrees on the counts the readable form prints.
	out := runStrategiesJSON(t, "", "testdata/strategies/support_agent.json", "--strategies", "1,4", "--model", "gpt-4")
	so := findStrategy(t, findPredictor(t, out, "classify"), 4)
	checkTokens(t, so, messagesOf(so), "gpt-4")
	line := "request: " + strconv.Itoa(so.Tokens) + " tokens ("
	if !strings.Contains(stdout, line) {
		t.Errorf("readable output lacks %q", line)
	}
}

func TestWireStrategiesChainOfThoughtAndDefaults(t *testing.T) {
	in := `{"agent": {"signature": {"inputs": [{"name": "question"}], "outputs": [{"name": "answer", "type": "int"}]},
	  "predictors": [{"path": "solve", "type": "ChainOfThought", "signature": "question -> answer: int"}]},
	  "turns": [{"inputs": {"question": "2+2"}, "outputs": {"answer": 4},
	             "calls": [{"path": "solve", "inputs": {"question": "2+2"}, "outputs": {"reasoning": "Add.", "answer": 4}}]}],
	  "current": {"inputs": {"question": "3+3", "unused": 1.0}},
	  "strategies": [2, 1]}`
	out := runStrategiesJSON(t, in)
	p := findPredictor(t, out, "solve")
	if p.Type != "ChainOfThought" || p.Signature != "question, history: History -> reasoning, answer: int" {
		t.Errorf("type %q signature %q", p.Type, p.Signature)
	}
	if len(p.Strategies) != 2 || p.Strategies[0].Number != 2 || p.Strategies[1].Number != 1 {
		t.Fatalf("want strategies 2 then 1 as listed, got %+v", p.Strategies)
	}
	// Own history has the reasoning; the outer turn does not, so strategy 2 shows None.
	s1, s2 := messagesOf(p.Strategies[1]), messagesOf(p.Strategies[0])
	if !strings.Contains(s1[2].Content, "[[ ## reasoning ## ]]\nAdd.") || len(p.Strategies[1].Lint) != 0 {
		t.Errorf("strategy 1 own turn %q lint %+v", s1[2].Content, p.Strategies[1].Lint)
	}
	if !strings.Contains(s2[2].Content, "[[ ## reasoning ## ]]\nNone") {
		t.Errorf("strategy 2 outer turn %q", s2[2].Content)
	}
	// Current inputs default to the outer inputs the signature names.
	if last := s1[len(s1)-1].Content; !strings.HasPrefix(last, "[[ ## question ## ]]\n3+3\n") || strings.Contains(last, "unused") {
		t.Errorf("current user message %q", last)
	}
}

func TestWireStrategiesErrors(t *testing.T) {
	agent := `"agent":{"signature":"q -> a","predictors":[{"path":"x","signature":"q -> b"}]}`
	cases := []struct {
		name, stdin string
		args        []string
		stderr      string
	}{
		{"truncated JSON", `{"agent":`, nil, "wire strategies: bad JSON: unexpected end of input"},
		{"syntax", "{\n  \"agent\" {}\n}", nil, "wire strategies: bad JSON at line 2, column 11: invalid character '{' after object key"},
		{"not an object", `[1]`, nil, "bad JSON: want an object, got a list"},
		{"trailing data", "{}\n {}", nil, "bad JSON at line 2, column 2: unexpected data after the JSON object"},
		{"no agent", `{}`, nil, "agent: missing"},
		{"unknown key", `{` + agent + `,"turn":[]}`, nil, `wire strategies: turn: unknown key (known here: model, agent, turns, current, strategies, template_for_keep)`},
		{"bad signature", `{"agent":{"signature":"q -> a","predictors":[{"path":"x","signature":"q, -> b"}]}}`, nil,
			`agent.predictors[0].signature: signature "q, -> b", column 3: empty field name`},
		{"bad type", `{"agent":{"signature":"q -> a","predictors":[{"path":"x","signature":"q: lst[str] -> b"}]}}`, nil,
			`agent.predictors[0].signature: `},
		{"bad object signature", `{"agent":{"signature":{"outputs":[{"name":"a","type":"integer"}]},"predictors":[{"path":"x","signature":"q -> b"}]}}`, nil,
			`agent.signature.outputs[0].type: type "integer"`},
		{"signature kind", `{"agent":{"signature":3,"predictors":[{"path":"x","signature":"q -> b"}]}}`, nil, `agent.signature: want a string such as`},
		{"no predictors", `{"agent":{"signature":"q -> a"}}`, nil, "agent.predictors: missing or empty"},
		{"duplicate path", `{"agent":{"signature":"q -> a","predictors":[{"path":"x","signature":"q -> b"},{"path":"x","signature":"q -> c"}]}}`, nil,
			`agent.predictors[1].path: predictor "x" is already defined at agent.predictors[0]`},
		{"bad predictor type", `{"agent":{"signature":"q -> a","predictors":[{"path":"x","signature":"q -> b","type":"ReAct"}]}}`, nil,
			`agent.predictors[0].type: unknown predictor type "ReAct"`},
		{"bad max_turns", `{"agent":{"signature":"q -> a","predictors":[{"path":"x","signature":"q -> b","max_turns":-1}]}}`, nil,
			`agent.predictors[0].max_turns: want a whole number >= 0, got -1`},
		{"half mapping", `{"agent":{"signature":"q -> a","predictors":[{"path":"x","signature":"q -> b","mapping":{"user":"{q}"}}]}}`, nil,
			`agent.predictors[0].mapping: want both "user" and "assistant"`},
		{"bad mapping template", `{"agent":{"signature":"q -> a","predictors":[{"path":"x","signature":"q -> b","mapping":{"user":"{q}","assistant":"x}"}}]}}`, nil,
			`agent.predictors[0].mapping.assistant: line 1, column 2: `},
		{"unknown call path", `{` + agent + `,"turns":[{},{"calls":[{"path":"y"}]}]}`, nil,
			`turns[1].calls[0].path: unknown predictor "y" (agent.predictors has: x)`},
		{"unknown current path", `{` + agent + `,"current":{"calls":{"y":{}}}}`, nil, `current.calls.y: unknown predictor "y"`},
		{"call inputs kind", `{` + agent + `,"turns":[{"calls":[{"path":"x","inputs":[1]}]}]}`, nil,
			`turns[0].calls[0].inputs: want an object of field values, got a list`},
		{"strategy out of range", `{` + agent + `,"strategies":[1,6]}`, nil, "strategies[1]: want a strategy number 1 to 5, got 6"},
		{"strategy not a number", `{` + agent + `,"strategies":["2"]}`, nil, `strategies[0]: want a strategy number 1 to 5, got "2"`},
		{"empty strategies", `{` + agent + `,"strategies":[]}`, nil, "strategies: empty"},
		{"flag strategy out of range", `{` + agent + `}`, []string{"--strategies", "1,0"}, `--strategies: want numbers 1 to 5 separated by commas, got "0"`},
		{"unknown --path", `{` + agent + `}`, []string{"--path", "nope"}, `--path: unknown predictor "nope"`},
		{"missing file", ``, []string{"testdata/strategies/nope.json"}, "wire strategies: reading the scenario: open testdata/strategies/nope.json"},
		{"two files", ``, []string{"a.json", "b.json"}, `want at most one scenario file, got 2 arguments ("a.json" "b.json")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runStrategiesCLI(t, c.stdin, c.args...)
			if code != strategiesBadInput {
				t.Fatalf("exit %d, want %d (stderr %q)", code, strategiesBadInput, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout should be empty, got %q", stdout)
			}
			if !strings.Contains(stderr, c.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, c.stderr)
			}
			if strings.Count(stderr, "\n") != 1 {
				t.Errorf("want a one-line error, got %q", stderr)
			}
		})
	}
	// A file's name prefixes its errors.
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/s.json", []byte("{\n\"agent\": 1}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, stderr := runStrategiesCLI(t, "", dir+"/s.json"); !strings.Contains(stderr, dir+"/s.json: agent: want an object, got an int") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestWireStrategiesHelp(t *testing.T) {
	code, stdout, stderr := runStrategiesCLI(t, "", "--help")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, s := range []string{"usage: sessionbench wire strategies", `"predictors": [`, `"current": {`, "--json prints:", "Exit codes:"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("help lacks %q", s)
		}
	}
	for _, s := range []string{"flags:", "-strategies string"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("help lacks %q", s)
		}
	}
	if code, _, stderr := runStrategiesCLI(t, "", "--bogus"); code != strategiesBadInput ||
		!strings.Contains(stderr, "sessionbench wire strategies: flag provided but not defined: -bogus (see 'sessionbench wire strategies --help')") {
		t.Errorf("unknown flag: exit %d stderr %q", code, stderr)
	}
}

// FuzzDecodeScenario: no input makes the decoder or the renderer panic, and a scenario
// that decodes renders every predictor under every strategy it lists.
func FuzzDecodeScenario(f *testing.F) {
	for _, name := range []string{"support_agent.json", "correct_translate.json"} {
		b, err := os.ReadFile("testdata/strategies/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(worstB))
	f.Add([]byte(`{"agent":{"signature":"q -> a","predictors":[{"path":"x","signature":"q -> b","mapping":{"user":"{q}","assistant":"{a}"},"max_turns":0}]},"turns":[{"inputs":{"q":null},"outputs":{"a":[1,{"b":2.5}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := decodeScenario(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		out, _, err := renderScenario(context.Background(), sc)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Predictors) != len(sc.Predictors) {
			t.Fatalf("%d predictors rendered, want %d", len(out.Predictors), len(sc.Predictors))
		}
		for _, p := range out.Predictors {
			if len(p.Strategies) != len(sc.Strategies) {
				t.Fatalf("%s: %d strategies rendered, want %d", p.Path, len(p.Strategies), len(sc.Strategies))
			}
		}
	})
}

// A strategy that could not be rendered shows its error in place of its messages.
func TestPrintStrategiesError(t *testing.T) {
	var b bytes.Buffer
	printStrategies(&b, strategiesOut{Encoding: "o200k_base", Predictors: []predictorOut{{Path: "x", Type: "Predict", Signature: "q -> a",
		Strategies: []strategyOut{{Number: 4, Name: "outer field mapping", Policy: "inherit", Adapter: "template",
			History: historyOut{Source: "outer", Turns: 3, Truncated: 2}, Error: "rendering: boom"}}}}})
	want := "tokens: o200k_base (no model given)\n\n=== x (Predict) q -> a\n\n" +
		"--- strategy 4: outer field mapping | policy inherit | template adapter | history: outer, 3 turns (2 turns cut by max_turns)\nerror: rendering: boom\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
