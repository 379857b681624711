// Package demo holds the seed scenarios as runnable agents, their demo-model scripts
// and the built-in tools, and the same agents as agent files (the format and its
// engine: go doc ./core/workflow).
//
// Agents() lists them: SupportAgent (classify -> respond), CorrectThenTranslate
// (corrector -> translator), RetryAgent (planner + validator, up to 3 attempts, best
// attempt per seed 003), StepAgent (thinker loop over safe built-in tools), RAGAgent
// (retriever without history, answerer with documents kept out of history),
// Orchestrator (planner, researcher, writer in a core.Container) and ResearchAgent
// (plan, a nested research module of two queries and a summary, answer: the one
// whose call records nest). Each Agent gives a fresh module and the session options
// the seed recommends (New), and the scripts that make the offline demo model follow
// the seed's dialogues (Scripts; llm.DemoOptions). The same agents ship as agent files
// (ExampleFiles) that record identical calls.
//
// Agent files are compiled with the built-in tools and may borrow a built-in agent's
// scripts (demo_script): Env, FileAgent. Reading them from disk is the application's
// (sessions.LoadAgentFile, sessions.Catalog).
package demo
