// Package workflow is the agent language: the agent-file format (TOML), its compiler
// and the seed-002 workflow engine it compiles to (steps, context modes, loops,
// summaries, parallel steps, module steps, retries), with seed 003's attempts. It is
// pure: Parse compiles a file from bytes; reading files and finding agent directories
// belong to the application, which also supplies the tools and demo scripts a file may
// name (Env). A compiled workflow is a core.Module run by a core.Session.
//
// # Agent files
//
// An agent file is TOML:
//
//	name = "support"
//	description = "shown in the UI"
//	inputs = ["question"]              # fields of the user-facing call; "history" names
//	                                   # the history the session injected
//	outputs = ["reply", "intent"]      # fields returned, in order
//	demo_script = "SupportAgent"       # optional: a built-in agent's demo-model script
//	[params]                           # constants available to every step
//	target_language = "French"
//	[session]                          # optional session defaults
//	nested_sessions = "keep"           # keep | inherit | unwrap | error
//	inner_scope = "cross_turn"         # cross_turn | per_turn | stateless
//	max_turns = 20
//	exclude_fields = ["documents"]     # kept out of the outer history
//
//	[[predictors]]
//	name = "classify"                  # also the call path; dots nest ("research.summarizer")
//	signature = "question -> intent"   # or [[predictors.inputs]]/[[predictors.outputs]] tables
//	instructions = "Classify the customer's intent."
//	type = "Predict"                   # or ChainOfThought
//	adapter = "chat"                   # chat | json | template ([predictors.template] or template_file)
//	json_fallback = true               # chat only: retry a failed parse with the JSON adapter (DSPy default)
//	model = "gpt-4o-mini"              # optional override, resolved by WithModelResolver
//	history = true                     # false: no history injected (recursion exclude)
//	exclude_fields = ["documents"]     # kept out of this predictor's own history
//
//	[[steps]]
//	name = "classify"
//	predictor = "classify"             # or tool = "...", set = {...}, steps, workflow = "..."
//	inputs = { question = "{question}" }
//	outputs = { intent = "intent" }
//
// Fields live in a scope: the inputs and params to start with, then whatever steps
// write. A value expression (step inputs, set) that is exactly "{field}" reads that
// field with its type; any other text is a template ("{task}\n\nFeedback: {feedback}")
// or, without braces, a literal. Unmapped inputs read the field of the same name;
// without outputs a step writes every result under its own name. Tools come from
// the application (Env.Tools); sessionbench's are built in and safe (demo.Tools):
// calculator (expression -> result), search (query -> documents, text over the
// in-memory knowledge base), date (-> date), act (action -> observation, done, answer;
// the StepAgent's dispatcher). There is no shell tool.
//
// A compound step (steps = [[steps.steps]] or workflow = a [workflows.NAME] list)
// runs its sub-steps in a child scope; inputs seed the child, outputs copy child
// fields up (parent = "child"). Per step: on_error = fail | skip | retry; max_retries
// (attempts in total, seed 003) with retry_until = a field that accepts an attempt;
// best = a score field (when no attempt is accepted the best-scoring attempt's result
// is kept; a later attempt must score strictly higher); counter, best_attempt and
// status name fields that receive the attempt count, the best attempt and
// completed/needs_human; [steps.loop] max_iterations and until = a field checked after
// every sub-step (state carries across iterations); summarize = true writes a one-line
// summary of what the child wrote to <name>_summary (or summary_to); parallel = true
// runs the sub-steps concurrently, each in an inherited view, and joins their writes in
// declaration order. Calls of parallel branches are started round-robin (branch 0,
// 1, 2, then their second calls ...), so the recorded order never depends on timing;
// two branches may not write the same field or call the same predictor.
//
// module = "TypeName" makes a compound step a sub-module, as a Go agent calling a
// nested module through core.Call: the session records one module-level call (path =
// the step's name, under any enclosing module step; type = TypeName) whose children are
// the calls made inside, and the module keeps a turn of its own. Predictors called
// inside are named under its path ("research.query" inside step "research"), the
// step's outputs are the module's outputs, and a module step may not sit inside a
// parallel step or summarize. A file with module steps is recursive over modules.
//
// # Context modes and the session engine
//
// A compound step's context_mode decides two things: which fields its sub-steps see,
// and which history its predictors get. Seed 002 defines the first; the second maps
// the same idea onto the session's nested policy and inner scope (seed 000 §3.2, §6.4):
//
//	mode       fields (seed 002)                         predictors' history
//	isolated   fresh scope: only the step's inputs        keep, per_turn: own calls of this
//	(default)  go in, only its outputs come out            outer turn only (a fresh episode)
//	shared     the parent's scope itself: reads and       inherit: the outer conversation,
//	           writes are the parent's                     no turns of their own
//	inherited  reads fall through to the parent,          keep, cross_turn: own calls across
//	           writes stay in the child                    turns; templates also get the
//	                                                        outer history (outer_history())
//
// Isolated is an independent sub-task, so its predictors start clean every turn but see
// their earlier calls within it (retry loops and think-act loops: seed §6.4 scenarios C
// and D). Shared continues the parent's task, which for a predictor means the user's
// conversation itself. Inherited sees the parent without writing to it: the predictor
// keeps a private memory (strategy 1) and, with a TemplateAdapter, can render the outer
// conversation too (strategy 5). Top-level steps use the [session] defaults (keep,
// cross_turn). The innermost compound step decides; a predictor's own nested_sessions
// and inner_scope keys override. A predictor has one history, so using it under two
// different modes is an error. Agent files are always recursive over predictors and
// record every call.
//
// Validation happens at load time and reports every problem with file, line and key:
// syntax and type errors, unknown keys, unknown predictors, tools and workflows, fields
// not produced by any earlier step, workflow cycles, bad signatures and bad templates.
// Files are found in $XDG_CONFIG_HOME/sessionbench/agents and ./agents (sessions.Catalog)
// or by path (LoadAgentFile).
package workflow
