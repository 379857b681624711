package core

import (
	"fmt"
	"strings"

	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// HistoryPolicy says what a call with explicit history does (seed 001).
type HistoryPolicy string

// History policies.
const (
	Override       HistoryPolicy = "override"        // stateless pass-through, nothing recorded
	UseIfProvided  HistoryPolicy = "use_if_provided" // run with it and record it as the snapshot
	ReplaceSession HistoryPolicy = "replace_session" // it becomes the seed; turns are cleared
)

// NestedPolicy says how a session behaves when called inside another (seed 000 §3.2).
type NestedPolicy string

// Nested policies.
const (
	NestedKeep    NestedPolicy = "keep"    // own history, own turns (default)
	NestedInherit NestedPolicy = "inherit" // outer history, no own turns, traced on the outer turn
	NestedUnwrap  NestedPolicy = "unwrap"  // behave as the bare module
	NestedError   NestedPolicy = "error"   // refuse, naming both sessions
)

// Scope says how far back a keep-child's history reaches (seed 000 §6.4).
type Scope string

// Inner scopes.
const (
	CrossTurn Scope = "cross_turn" // all of the child's calls along the outer path (default)
	PerTurn   Scope = "per_turn"   // only the child's calls within the current outer turn
	Stateless Scope = "stateless"  // no history, nothing recorded
)

// Lifespan says how long a session's turns live (dspy-session's with_memory lifespan).
type Lifespan string

// Lifespans.
const (
	// LifespanPersistent keeps the turns (default).
	LifespanPersistent Lifespan = "persistent"
	// LifespanEpisodic keeps the turns for one root call: when it ends (also when it
	// failed) the consolidator, when there is one, turns them and the L2 memory into the
	// new L2 memory, and the turns are cleared.
	LifespanEpisodic Lifespan = "episodic"
	// LifespanStateless records nothing; the history is the seed alone.
	LifespanStateless Lifespan = "stateless"
)

// RecordMode says what a session records.
type RecordMode string

// Record modes. "calls" keeps call records without the exact request and raw answer
// (a Sink still receives them whole); "all" keeps everything.
const (
	RecordTurns RecordMode = "turns"
	RecordCalls RecordMode = "calls"
	RecordAll   RecordMode = "all"
)

// Recursion says what a session wraps below it.
type Recursion string

// Recursion modes ("" is false; true is an alias of predictors, ARCHITECTURE.md, open questions).
const (
	NotRecursive Recursion = ""
	Predictors   Recursion = "predictors"
	Modules      Recursion = "modules"
)

// ChildConfig overrides options for one child path (and, by prefix, its descendants).
type ChildConfig struct {
	Nested             NestedPolicy
	Scope              Scope
	ExcludeFields      []string
	HistoryInputFields []string
	MaxTurns           *int
	MaxStoredTurns     *int
	InitialHistory     *sig.History
	Disabled           bool // do not wrap this child at all
	Lifespan           Lifespan
	Consolidator       Module
}

// Options configure a session. The zero value is a flat session with dspy-session's defaults.
type Options struct {
	HistoryField   string // default "history"
	MaxTurns       *int   // window over history messages (seed included); 0 means none
	MaxStoredTurns *int
	ExcludeFields  []string // never put in history; always includes HistoryField
	// HistoryInputFields is an allow-list for inputs; nil or empty: all inputs (as in
	// dspy-session, which loads an empty list as None); exclude wins.
	HistoryInputFields []string
	InitialHistory     *sig.History
	HistoryPolicy      HistoryPolicy // default override
	// CopyMode is dspy-session's copy_mode ("deep" by default, "shallow", "none"), kept
	// and saved as given. A Go session never changes the module it wraps, so the modes
	// behave alike here.
	CopyMode      string
	OnMetricError string // "zero" (default) or "raise"
	OnTurn        func(s *Session, t *trace.Turn)

	Recursive      Recursion
	Include        []string
	Exclude        []string
	Where          func(path string, m Module) bool
	ChildConfigs   map[string]ChildConfig
	NestedSessions NestedPolicy // default keep
	InnerScope     Scope        // default cross_turn
	Record         RecordMode   // default turns, or all when recursive
	OnCall         func(s *Session, c *trace.Call)

	// Lifespan is the session's lifespan (default persistent); children inherit it unless
	// child_configs says otherwise. Consolidator is what an episodic session runs at the end
	// of each root call: it is called with past_memory (the L2 memory) and
	// episode_transcript (the ledger of the turns), and its first output among
	// updated_memory, memory, l2_memory and output becomes the new L2 memory.
	Lifespan     Lifespan
	Consolidator Module

	// Sink, when set, receives every turn as it happens (durable storage).
	Sink trace.Sink
	// Name labels the session in errors and traces (default: the module's type).
	Name string
}

// Int returns a pointer to n, for the optional integer options.
func Int(n int) *int { return &n }

// normalize fills defaults and checks enumerations.
func (o Options) normalize() (Options, error) {
	if o.HistoryField == "" {
		o.HistoryField = "history"
	}
	if o.HistoryPolicy == "" {
		o.HistoryPolicy = Override
	}
	if o.OnMetricError == "" {
		o.OnMetricError = "zero"
	}
	if o.CopyMode == "" {
		o.CopyMode = "deep"
	}
	if o.Lifespan == "" {
		o.Lifespan = LifespanPersistent
	}
	if o.NestedSessions == "" {
		o.NestedSessions = NestedKeep
	}
	if o.InnerScope == "" {
		o.InnerScope = CrossTurn
	}
	if o.Record == "" {
		o.Record = RecordTurns
		if o.Recursive != NotRecursive {
			o.Record = RecordAll
		}
	}
	if o.Recursive == "true" {
		o.Recursive = Predictors
	}
	checks := []struct {
		name, val string
		ok        []string
	}{
		{"history_policy", string(o.HistoryPolicy), []string{"override", "use_if_provided", "replace_session"}},
		{"on_metric_error", o.OnMetricError, []string{"zero", "raise"}},
		{"copy_mode", o.CopyMode, []string{"deep", "shallow", "none"}},
		{"lifespan", string(o.Lifespan), []string{"persistent", "episodic", "stateless"}},
		{"nested_sessions", string(o.NestedSessions), []string{"keep", "inherit", "unwrap", "error"}},
		{"inner_scope", string(o.InnerScope), []string{"cross_turn", "per_turn", "stateless"}},
		{"record", string(o.Record), []string{"turns", "calls", "all"}},
		{"recursive", string(o.Recursive), []string{"", "predictors", "modules"}},
	}
	for _, c := range checks {
		if !contains(c.ok, c.val) {
			return o, fmt.Errorf("option %s: %q is not one of %s", c.name, c.val, strings.Join(c.ok, ", "))
		}
	}
	for path, cc := range o.ChildConfigs {
		if cc.Nested != "" && !contains([]string{"keep", "inherit", "unwrap", "error"}, string(cc.Nested)) {
			return o, fmt.Errorf("option child_configs[%q].nested_sessions: %q is not one of keep, inherit, unwrap, error", path, cc.Nested)
		}
		if cc.Scope != "" && !contains([]string{"cross_turn", "per_turn", "stateless"}, string(cc.Scope)) {
			return o, fmt.Errorf("option child_configs[%q].inner_scope: %q is not one of cross_turn, per_turn, stateless", path, cc.Scope)
		}
		if cc.Lifespan != "" && !contains([]string{"persistent", "episodic", "stateless"}, string(cc.Lifespan)) {
			return o, fmt.Errorf("option child_configs[%q].lifespan: %q is not one of persistent, episodic, stateless", path, cc.Lifespan)
		}
	}
	if o.MaxTurns != nil && *o.MaxTurns < 0 {
		return o, fmt.Errorf("option max_turns: %d is negative", *o.MaxTurns)
	}
	if o.MaxStoredTurns != nil && *o.MaxStoredTurns < 0 {
		return o, fmt.Errorf("option max_stored_turns: %d is negative", *o.MaxStoredTurns)
	}
	if !contains(o.ExcludeFields, o.HistoryField) {
		o.ExcludeFields = append(append([]string(nil), o.ExcludeFields...), o.HistoryField)
	}
	return o, nil
}

// WithFileSettings fills the history settings o leaves unset from a save file's settings
// and its extension's session options (recursive, record), as Load applies them.
func (o Options) WithFileSettings(fs savefile.Settings, ext *sig.Map) Options {
	if o.HistoryField == "" {
		o.HistoryField = fs.HistoryField
	}
	if o.MaxTurns == nil {
		o.MaxTurns = fs.MaxTurns
	}
	if o.MaxStoredTurns == nil {
		o.MaxStoredTurns = fs.MaxStoredTurns
	}
	if o.ExcludeFields == nil {
		o.ExcludeFields = fs.ExcludeFields
	}
	if o.HistoryInputFields == nil {
		o.HistoryInputFields = fs.HistoryInputFields
	}
	if o.HistoryPolicy == "" {
		o.HistoryPolicy = HistoryPolicy(fs.HistoryPolicy)
	}
	if o.CopyMode == "" {
		o.CopyMode = fs.CopyMode
	}
	if o.Recursive == "" {
		r, _ := ext.Get("recursive")
		s, _ := r.(string)
		o.Recursive = Recursion(s)
	}
	if o.Record == "" {
		r, _ := ext.Get("record")
		s, _ := r.(string)
		o.Record = RecordMode(s)
	}
	return o
}

// childOptions derives a child's options: the parent's history settings, then the
// child_configs entries that match the path (shorter prefixes first, exact last).
func (o Options) childOptions(path string) (Options, NestedPolicy, bool) {
	c := Options{
		HistoryField: o.HistoryField, MaxTurns: o.MaxTurns, MaxStoredTurns: o.MaxStoredTurns,
		InnerScope: o.InnerScope, Record: RecordTurns, OnMetricError: o.OnMetricError,
		Lifespan: o.Lifespan, Consolidator: o.Consolidator, Name: path,
	}
	nested := o.NestedSessions
	disabled := false
	for _, key := range matchingConfigs(o.ChildConfigs, path) {
		cc := o.ChildConfigs[key]
		if cc.Nested != "" {
			nested = cc.Nested
		}
		if cc.Scope != "" {
			c.InnerScope = cc.Scope
		}
		if cc.ExcludeFields != nil {
			c.ExcludeFields = cc.ExcludeFields
		}
		if cc.HistoryInputFields != nil {
			c.HistoryInputFields = cc.HistoryInputFields
		}
		if cc.MaxTurns != nil {
			c.MaxTurns = cc.MaxTurns
		}
		if cc.MaxStoredTurns != nil {
			c.MaxStoredTurns = cc.MaxStoredTurns
		}
		if cc.InitialHistory != nil {
			c.InitialHistory = cc.InitialHistory
		}
		if cc.Lifespan != "" {
			c.Lifespan = cc.Lifespan
		}
		if cc.Consolidator != nil {
			c.Consolidator = cc.Consolidator
		}
		disabled = disabled || cc.Disabled
	}
	return c, nested, disabled
}

// matchingConfigs returns the child_configs keys equal to path or a dotted prefix of it,
// shortest first, so the most specific entry is applied last.
func matchingConfigs(cfgs map[string]ChildConfig, path string) []string {
	var keys []string
	for k := range cfgs {
		if pathMatches(k, path) {
			keys = append(keys, k)
		}
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && len(keys[j]) < len(keys[j-1]); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// pathMatches reports whether pattern names path exactly or is a dotted prefix of it.
func pathMatches(pattern, path string) bool {
	return pattern == path || strings.HasPrefix(path, pattern+".")
}

func matchesAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if pathMatches(p, path) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
