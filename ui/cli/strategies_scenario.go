package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/template"
)

// scenario is the input of `wire strategies` (the format is documented in strategiesHelp).
type scenario struct {
	Model           string
	Outer           *sig.Signature
	OuterMaxTurns   int // window over the outer history; -1 means none
	Predictors      []*scenarioPredictor
	Turns           []scenarioTurn
	Current         *sig.Map            // the outer inputs of the turn being rendered
	CallInputs      map[string]*sig.Map // per-predictor inputs of that turn, by path
	Strategies      []int
	TemplateForKeep bool
}

type scenarioPredictor struct {
	Path      string
	Type      string         // "Predict" or "ChainOfThought"
	Signature *sig.Signature // as the predictor sends it (ChainOfThought's reasoning included), without the history field
	MaxTurns  int            // window over the predictor's own history; -1 means none
	Mapping   *core.Mapping
	Demos     []*sig.Map
}

type scenarioTurn struct {
	Inputs, Outputs *sig.Map
	Calls           []scenarioCall
}

type scenarioCall struct {
	Path            string
	Inputs, Outputs *sig.Map
}

// sobj is a JSON object of the scenario with its location, for errors that say where.
type sobj struct {
	m    *sig.Map
	path string
}

func (o sobj) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

func asObject(v any, path string) (sobj, error) {
	m, ok := v.(*sig.Map)
	if !ok {
		return sobj{}, werrf(path, "want an object, got %s", sig.KindName(v))
	}
	return sobj{m, path}, nil
}

func werrf(path, format string, a ...any) error {
	return &adapter.WireError{Path: path, Err: fmt.Errorf(format, a...)}
}

// only rejects keys outside known: a misspelt key would otherwise be silently ignored.
func (o sobj) only(known ...string) error {
	for _, k := range o.m.Keys() {
		found := false
		for _, want := range known {
			found = found || k == want
		}
		if !found {
			return werrf(o.at(k), "unknown key (known here: %s)", strings.Join(known, ", "))
		}
	}
	return nil
}

// get returns the value at key; null counts as absent.
func (o sobj) get(key string) (any, bool) {
	v, ok := o.m.Get(key)
	return v, ok && v != nil
}

func (o sobj) str(key string) (string, error) {
	v, ok := o.get(key)
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", werrf(o.at(key), "want a string, got %s", sig.KindName(v))
	}
	return s, nil
}

// maxTurns reads an optional non-negative integer (-1 when absent).
func (o sobj) maxTurns(key string) (int, error) {
	v, ok := o.get(key)
	if !ok {
		return -1, nil
	}
	n, ok := v.(int64)
	if !ok || n < 0 || n > 1<<31 {
		return 0, werrf(o.at(key), "want a whole number >= 0, got %s", py.CompactJSON(v))
	}
	return int(n), nil
}

func (o sobj) list(key string) ([]any, error) {
	v, ok := o.get(key)
	if !ok {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, werrf(o.at(key), "want a list, got %s", sig.KindName(v))
	}
	return l, nil
}

// values reads an object of field values (an empty map when absent).
func (o sobj) values(key string) (*sig.Map, error) {
	v, ok := o.get(key)
	if !ok {
		return sig.NewMap(), nil
	}
	m, ok := v.(*sig.Map)
	if !ok {
		return nil, werrf(o.at(key), "want an object of field values, got %s", sig.KindName(v))
	}
	return m, nil
}

// decodeScenario reads and checks a scenario. Values keep their JSON kinds and key order.
func decodeScenario(data []byte) (*scenario, error) {
	v, err := sig.DecodeJSON(data)
	if err != nil {
		return nil, jsonSyntaxError(data, err)
	}
	top, err := asObject(v, "")
	if err != nil {
		return nil, &adapter.WireError{Err: fmt.Errorf("bad JSON: want an object, got %s", sig.KindName(v))}
	}
	if err := top.only("model", "agent", "turns", "current", "strategies", "template_for_keep"); err != nil {
		return nil, err
	}
	sc := &scenario{CallInputs: map[string]*sig.Map{}}
	if sc.Model, err = top.str("model"); err != nil {
		return nil, err
	}
	if t, ok := top.get("template_for_keep"); ok {
		b, ok := t.(bool)
		if !ok {
			return nil, werrf("template_for_keep", "want true or false, got %s", sig.KindName(t))
		}
		sc.TemplateForKeep = b
	}
	if err := sc.decodeAgent(top); err != nil {
		return nil, err
	}
	if err := sc.decodeTurns(top); err != nil {
		return nil, err
	}
	if err := sc.decodeCurrent(top); err != nil {
		return nil, err
	}
	list, err := top.list("strategies")
	if err != nil {
		return nil, err
	}
	if list == nil {
		sc.Strategies = []int{1, 2, 3, 4, 5}
	}
	for i, e := range list {
		n, ok := e.(int64)
		if !ok || n < 1 || n > 5 {
			return nil, werrf(fmt.Sprintf("strategies[%d]", i), "want a strategy number 1 to 5, got %s", py.CompactJSON(e))
		}
		sc.Strategies = append(sc.Strategies, int(n))
	}
	if len(sc.Strategies) == 0 {
		return nil, werrf("strategies", "empty (leave it out for all five)")
	}
	return sc, nil
}

// jsonSyntaxError locates a JSON error as line:column.
func jsonSyntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		line, col := lineColumn(data, se.Offset)
		return &adapter.WireError{Err: fmt.Errorf("bad JSON at line %d, column %d: %w", line, col, err)}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return &adapter.WireError{Err: errors.New("bad JSON: unexpected end of input (want one JSON object)")}
	}
	if strings.HasPrefix(err.Error(), "unexpected data after the JSON value") {
		// Point at the extra data: the first byte after the first value that is not space.
		dec := json.NewDecoder(bytes.NewReader(data))
		var first json.RawMessage
		if dec.Decode(&first) == nil {
			off := dec.InputOffset()
			for off < int64(len(data)) && strings.IndexByte(" \t\r\n", data[off]) >= 0 {
				off++
			}
			line, col := lineColumn(data, off)
			return &adapter.WireError{Err: fmt.Errorf("bad JSON at line %d, column %d: unexpected data after the JSON object", line, col)}
		}
	}
	return &adapter.WireError{Err: fmt.Errorf("bad JSON: %w", err)}
}

// lineColumn turns a byte offset (json.SyntaxError's: from the decoder's Token, the
// bytes before the bad one) into the bad byte's 1-based line and column.
func lineColumn(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	line, col = 1, 1
	for i := int64(0); i < offset; i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func (sc *scenario) decodeAgent(top sobj) error {
	v, ok := top.get("agent")
	if !ok {
		return werrf("agent", "missing (the outer signature and its predictors)")
	}
	ag, err := asObject(v, "agent")
	if err != nil {
		return err
	}
	if err := ag.only("signature", "instructions", "max_turns", "predictors"); err != nil {
		return err
	}
	if sc.Outer, err = decodeSig(ag, false); err != nil {
		return err
	}
	if sc.OuterMaxTurns, err = ag.maxTurns("max_turns"); err != nil {
		return err
	}
	list, err := ag.list("predictors")
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return werrf("agent.predictors", "missing or empty (want at least one predictor)")
	}
	seen := map[string]string{}
	for i, e := range list {
		p, err := decodePredictor(e, fmt.Sprintf("agent.predictors[%d]", i), sc.Outer)
		if err != nil {
			return err
		}
		if prev, dup := seen[p.Path]; dup {
			return werrf(fmt.Sprintf("agent.predictors[%d].path", i), "predictor %q is already defined at %s", p.Path, prev)
		}
		seen[p.Path] = fmt.Sprintf("agent.predictors[%d]", i)
		sc.Predictors = append(sc.Predictors, p)
	}
	return nil
}

// decodeSig reads o.signature as a string ("question, k: int -> answer") or the
// object form `wire format` takes; o.instructions, when given, replaces the instructions.
func decodeSig(o sobj, predictor bool) (*sig.Signature, error) {
	raw, ok := o.get("signature")
	if !ok {
		return nil, werrf(o.at("signature"), "missing")
	}
	instr, err := o.str("instructions")
	if err != nil {
		return nil, err
	}
	var s *sig.Signature
	switch r := raw.(type) {
	case string:
		if s, err = sig.ParseWith(r, instr); err != nil {
			return nil, &adapter.WireError{Path: o.at("signature"), Err: err}
		}
	case *sig.Map:
		if s, err = adapter.DecodeSignature(r, o.at("signature")); err != nil {
			return nil, err
		}
		if len(s.Outputs) == 0 {
			return nil, werrf(o.at("signature.outputs"), "missing or empty (want at least one output field)")
		}
		if instr != "" {
			s.Instructions = instr
		}
	default:
		return nil, werrf(o.at("signature"), "want a string such as \"question -> answer\" or a signature object, got %s", sig.KindName(raw))
	}
	if predictor {
		for i, f := range s.Inputs {
			if f.Type.IsHistory() && i != len(s.Inputs)-1 {
				return nil, werrf(o.at("signature"), "the History-typed input %q must come last", f.Name)
			}
		}
	}
	return s, nil
}

func decodePredictor(v any, path string, outer *sig.Signature) (*scenarioPredictor, error) {
	o, err := asObject(v, path)
	if err != nil {
		return nil, err
	}
	if err := o.only("path", "signature", "instructions", "type", "max_turns", "mapping", "demos"); err != nil {
		return nil, err
	}
	p := &scenarioPredictor{}
	if p.Path, err = o.str("path"); err != nil {
		return nil, err
	}
	if p.Path == "" {
		return nil, werrf(o.at("path"), "missing (the predictor's name in the agent, e.g. \"classify\")")
	}
	if p.Signature, err = decodeSig(o, true); err != nil {
		return nil, err
	}
	if p.Type, err = o.str("type"); err != nil {
		return nil, err
	}
	switch p.Type {
	case "", "Predict":
		p.Type = "Predict"
	case "ChainOfThought":
		if _, dup := p.Signature.Output("reasoning"); dup {
			return nil, werrf(o.at("signature"), "a ChainOfThought predictor adds the output \"reasoning\" itself")
		}
		p.Signature = p.Signature.PrependOutput(sig.Field{Name: "reasoning", Type: sig.TStr})
	default:
		return nil, werrf(o.at("type"), "unknown predictor type %q (want Predict or ChainOfThought)", p.Type)
	}
	if p.MaxTurns, err = o.maxTurns("max_turns"); err != nil {
		return nil, err
	}
	if mv, ok := o.get("mapping"); ok {
		mo, err := asObject(mv, o.at("mapping"))
		if err != nil {
			return nil, err
		}
		if err := mo.only("user", "assistant"); err != nil {
			return nil, err
		}
		var m core.Mapping
		if m.User, err = mo.str("user"); err != nil {
			return nil, err
		}
		if m.Assistant, err = mo.str("assistant"); err != nil {
			return nil, err
		}
		if m.User == "" || m.Assistant == "" {
			return nil, werrf(mo.path, "want both \"user\" and \"assistant\" templates, e.g. {\"user\":\"{question}\",\"assistant\":\"{reply}\"}")
		}
		p.Mapping = &m
	}
	// Strategy 4 is the only preset built from scenario text (the mapping): check it now
	// so that a bad template is an input error, not a failed rendering.
	if _, err := core.Preset(4, withHistory(p.Signature), core.PresetOptions{Outer: outer, Mapping: p.Mapping}); err != nil {
		var te *template.TemplateError
		if errors.As(err, &te) && (te.Key == "user" || te.Key == "assistant") {
			return nil, werrf(o.at("mapping."+te.Key), "line %d, column %d: %s", te.Line, te.Column, te.Msg)
		}
		return nil, &adapter.WireError{Path: o.at("mapping"), Err: err}
	}
	demos, err := o.list("demos")
	if err != nil {
		return nil, err
	}
	for i, d := range demos {
		m, ok := d.(*sig.Map)
		if !ok {
			return nil, werrf(fmt.Sprintf("%s[%d]", o.at("demos"), i), "want an object, got %s", sig.KindName(d))
		}
		p.Demos = append(p.Demos, m)
	}
	return p, nil
}

func (sc *scenario) predictor(path string) *scenarioPredictor {
	for _, p := range sc.Predictors {
		if p.Path == path {
			return p
		}
	}
	return nil
}

func (sc *scenario) unknownPath(at, path string) error {
	known := make([]string, len(sc.Predictors))
	for i, p := range sc.Predictors {
		known[i] = p.Path
	}
	return werrf(at, "unknown predictor %q (agent.predictors has: %s)", path, strings.Join(known, ", "))
}

func (sc *scenario) decodeTurns(top sobj) error {
	list, err := top.list("turns")
	if err != nil {
		return err
	}
	for i, e := range list {
		o, err := asObject(e, "turns["+strconv.Itoa(i)+"]")
		if err != nil {
			return err
		}
		if err := o.only("inputs", "outputs", "calls"); err != nil {
			return err
		}
		var t scenarioTurn
		if t.Inputs, err = o.values("inputs"); err != nil {
			return err
		}
		if t.Outputs, err = o.values("outputs"); err != nil {
			return err
		}
		calls, err := o.list("calls")
		if err != nil {
			return err
		}
		for j, ce := range calls {
			c, err := asObject(ce, fmt.Sprintf("%s[%d]", o.at("calls"), j))
			if err != nil {
				return err
			}
			if err := c.only("path", "inputs", "outputs"); err != nil {
				return err
			}
			var call scenarioCall
			if call.Path, err = c.str("path"); err != nil {
				return err
			}
			if sc.predictor(call.Path) == nil {
				return sc.unknownPath(c.at("path"), call.Path)
			}
			if call.Inputs, err = c.values("inputs"); err != nil {
				return err
			}
			if call.Outputs, err = c.values("outputs"); err != nil {
				return err
			}
			t.Calls = append(t.Calls, call)
		}
		sc.Turns = append(sc.Turns, t)
	}
	return nil
}

func (sc *scenario) decodeCurrent(top sobj) error {
	sc.Current = sig.NewMap()
	v, ok := top.get("current")
	if !ok {
		return nil
	}
	o, err := asObject(v, "current")
	if err != nil {
		return err
	}
	if err := o.only("inputs", "calls"); err != nil {
		return err
	}
	if sc.Current, err = o.values("inputs"); err != nil {
		return err
	}
	calls, err := o.values("calls")
	if err != nil {
		return err
	}
	var bad error
	calls.Range(func(path string, v any) bool {
		at := o.at("calls") + "." + path
		if sc.predictor(path) == nil {
			bad = sc.unknownPath(at, path)
			return false
		}
		m, ok := v.(*sig.Map)
		if !ok {
			bad = werrf(at, "want an object of the predictor's inputs, got %s", sig.KindName(v))
			return false
		}
		sc.CallInputs[path] = m
		return true
	})
	return bad
}

// withHistory is the predictor's signature as a session sends it (history input last).
func withHistory(s *sig.Signature) *sig.Signature { return core.WithHistoryField(s, "history") }
