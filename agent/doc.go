// Package agent is dsh's agent loop (docs/behaviour.md §8): it turns a user's message into model
// requests and tool calls, one turn at a time, and records everything in a session log.
//
// # Turns and steps
//
// Agent.Run runs one turn. A turn is a sequence of steps; each step makes one model
// request and, when the reply asks for tools, runs its calls:
//
//	turn/start
//	  step/start, user/message* (the claimed inbox, then the user's message on step 1),
//	  assistant/message, tool/call … tool/result … (model order), step/end
//	  step/start, user/message* (contexts the tools deferred), assistant/message, …, step/end
//	turn/end {reason}
//
// The request of every step is derived from the log (session.DeriveMessages), so a log is
// all it takes to resume a session: New continues the turn numbering of the log it is
// given, and Resume opens a stored session (whose crash-interrupted turn the store has
// already closed) and returns an agent that continues it with a new turn.
//
// A turn ends with exactly one turn/end whose reason says why:
//
//	completed   the model answered without calling tools, or a tool concluded the turn
//	max-tokens  a reply hit the token limit (its tool calls are not run); sticky for the turn
//	max-steps   the step limit (Config.MaxSteps) was reached while the model still called tools
//	aborted     the context was cancelled; reason {kind} says who (see CancelCause)
//	error       the model call failed ({message, code} with the llm error code), the log
//	            failed, the prompt could not be assembled, a pre-step hook failed
//
// The step sequence follows the reference harness, which claims a turn's first input after
// step/start; it writes no assistant/chunk, request/header or request/context events (the
// deltas reach the Observer instead).
//
// # Tool calls
//
// The tool-call blocks of a completed reply run through a Scheduler (docs/behaviour.md §8.2–§8.5):
// exclusive calls are barriers, concurrency-safe calls share a rolling pool of
// Config.MaxParallelToolCalls dispatches, and each call's tool/call (durable), policy
// decisions, tool/result and deferred contexts commit in model order; only dispatch
// overlaps. Classification is re-read before each call starts, so a registry change made by
// an earlier call is honoured. Argument text that is not JSON reaches the pipeline as the raw
// string (docs/behaviour.md §8.1) and fails INVALID_ARGS there. A reply cut short by the token limit
// never runs its calls.
//
// On cancellation the started calls drain and commit, then every call that did not start
// gets a tool/call and an ABORTED_BEFORE_DISPATCH tool/result, so each tool/call in the log
// has exactly one tool/result. Contexts deferred by tools go to the agent's next-step inbox
// and become user/message events of the next step, after all of this step's results; a
// cancellation clears the contexts accepted before it (unless the cause keeps the inbox) and
// parks the ones accepted while draining for the next turn. A successful result that
// concludes the turn (docs/behaviour.md §4.11) ends it after the batch unless the inbox is non-empty.
//
// # Prompt
//
// The system prompt is assembled for every step from ordered sections: a short base prompt
// (Config.SystemPrompt replaces it) stating the workspace, the date and that tools run under
// policies; the Code Mode instruction when the agent's presentation mode is exactly code;
// and whatever Config.PromptSections add (the Code Mode SDK section, for example). Tools
// are offered natively through the request's tools field: every visible schema in native
// mode, only run_code in code mode, both in both mode, sorted by name or by
// Config.ToolOrder (docs/behaviour.md §3.10).
package agent
