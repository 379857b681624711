package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/core/workflow"
)

// RetryAgent is seed 000's scenario C: a planner and a validator, up to three attempts,
// each retry told why the previous plan was rejected. The best attempt is tracked by
// the validator's score (seed 003): when no plan is valid the best one is returned and
// the status is needs_human.
type RetryAgent struct {
	Planner     *core.Predict // ChainOfThought: task -> reasoning, plan
	Validator   *core.Predict // plan -> is_valid: bool, score: float, feedback
	MaxAttempts int
}

// NewRetryAgent builds the agent with three attempts.
func NewRetryAgent() *RetryAgent {
	return &RetryAgent{
		Planner: core.ChainOfThought(sig.New("PlanTask", "Write a short, numbered plan for the task.",
			[]sig.Field{str("task", "")}, []sig.Field{str("plan", "")})),
		Validator: &core.Predict{Signature: sig.New("ValidatePlan",
			"Check whether the plan is concrete enough to carry out. Score it from 0.0 to 1.0.",
			[]sig.Field{str("plan", "")},
			[]sig.Field{{Name: "is_valid", Type: sig.TBool}, {Name: "score", Desc: "Quality from 0.0 to 1.0", Type: sig.TFloat}, str("feedback", "")})},
		MaxAttempts: 3,
	}
}

// Submodules names the predictors for sessions.
func (a *RetryAgent) Submodules() []core.Sub {
	return []core.Sub{{Name: "planner", Module: a.Planner}, {Name: "validator", Module: a.Validator}}
}

// retryOutputs are the fields the agent returns, in order.
var retryOutputs = []string{"plan", "is_valid", "score", "feedback", "attempts", "best_attempt", "status"}

// Forward plans and validates until a plan is valid or the attempts run out.
func (a *RetryAgent) Forward(ctx context.Context, in *sig.Map) (*core.Prediction, error) {
	v, err := need("RetryAgent", in, "task")
	if err != nil {
		return nil, err
	}
	task := v[0]
	// The attempts are recorded as the agent-file twin's loop step "attempt" records them.
	log := &workflow.AttemptLog{Step: "attempt", Max: max(a.MaxAttempts, 1)}
	var last *sig.Map
	status := trace.StatusNeedsHuman
	for log.CanRetry() {
		actx := log.Begin(ctx)
		p, err := a.Planner.Forward(actx, sig.NewMap("task", task))
		if err != nil {
			return nil, err
		}
		r, err := a.Validator.Forward(actx, sig.NewMap("plan", p.Get("plan")))
		if err != nil {
			return nil, err
		}
		score, _ := workflow.Score(r.Get("score"))
		last = sig.NewMap("plan", p.Get("plan"), "is_valid", r.Get("is_valid"), "score", r.Get("score"), "feedback", r.Get("feedback"))
		log.Add(score, last)
		if workflow.Truthy(r.Get("is_valid")) {
			status = trace.StatusCompleted
			break
		}
		task = fmt.Sprintf("%s\n\nPrevious attempt was invalid: %s", py.Text(task), r.String("feedback"))
	}
	log.Record(ctx)
	if status != trace.StatusCompleted {
		last = log.Best().Details
	}
	out := last.Clone()
	out.Set("attempts", int64(log.Count()))
	out.Set("best_attempt", int64(log.BestAttempt))
	out.Set("status", string(status))
	return &core.Prediction{Fields: out}, nil
}

// LoopOptions are for agents that call a predictor several times per turn (seed §6.4
// scenarios C and D): keep, per_turn — each turn is a fresh episode in which every
// call sees the earlier calls of the same turn, but no stale reasoning from older turns.
func LoopOptions() core.Options {
	return core.Options{Recursive: core.Predictors, NestedSessions: core.NestedKeep, InnerScope: core.PerTurn, Record: core.RecordAll}
}

func retryAgent() Agent {
	return goAgent("RetryAgent",
		"Plans a task and validates the plan, up to 3 attempts; each retry sees why the last plan failed. The best-scoring attempt is kept (needs_human when none passes).",
		[]string{"task"}, retryOutputs,
		func() (core.Module, core.Options) { return NewRetryAgent(), LoopOptions() },
		retryScripts()...)
}

// StepAgent is seed 000's scenario D: a thinker that picks an action, sees its
// observation and continues, for at most MaxSteps steps. Its tools are built in and
// safe: calculator, knowledge-base search and the current date (never a shell).
type StepAgent struct {
	Thinker  *core.Predict // task, observation -> thought, action
	MaxSteps int
	Now      Clock
}

// NoObservation is the thinker's observation before its first action.
const NoObservation = "No observation yet."

// NewStepAgent builds the agent with five steps and the given clock (time.Now when nil).
func NewStepAgent(now Clock) *StepAgent {
	if now == nil {
		now = time.Now
	}
	return &StepAgent{
		Thinker: &core.Predict{Signature: sig.New("ThinkStep",
			"Solve the task one step at a time. Tools: calculator (arithmetic), search (the product knowledge base), date (today's date). When the observation answers the task, finish.",
			[]sig.Field{str("task", ""), str("observation", "")},
			[]sig.Field{str("thought", ""), str("action", "One of: calculator: <expression> | search: <query> | date | finish: <answer>")})},
		MaxSteps: 5,
		Now:      now,
	}
}

// Submodules names the predictor for sessions.
func (a *StepAgent) Submodules() []core.Sub { return []core.Sub{{Name: "thinker", Module: a.Thinker}} }

// Forward runs the think-act loop and returns the answer and the number of steps.
func (a *StepAgent) Forward(ctx context.Context, in *sig.Map) (*core.Prediction, error) {
	v, err := need("StepAgent", in, "task")
	if err != nil {
		return nil, err
	}
	observation := NoObservation
	var act Action
	steps := 0
	for steps < max(a.MaxSteps, 1) {
		steps++
		r, err := a.Thinker.Forward(ctx, sig.NewMap("task", v[0], "observation", observation))
		if err != nil {
			return nil, err
		}
		act = Act(r.String("action"), a.Now())
		observation = act.Observation
		if act.Done {
			break
		}
	}
	return core.NewPrediction("answer", act.Answer, "steps", steps), nil
}

func stepAgent(now Clock) Agent {
	ag := goAgent("StepAgent",
		"Thinks step by step with safe built-in tools (calculator, knowledge-base search, today's date) for up to 5 steps per question.",
		[]string{"task"}, []string{"answer", "steps"}, nil, stepScripts()...)
	ag.build = func() (core.Module, core.Options, error) { return NewStepAgent(now), LoopOptions(), nil }
	ag.withClock = func(c Clock) Agent { return stepAgent(c) }
	return ag
}
