// Package durable runs dsh sessions as Temporal workflows, so that a session survives a
// crashed worker or a deploy, its tools run on the host that holds the workspace, and an
// approval can be answered hours later from another machine.
//
// A session is one workflow (WorkflowName). A turn arrives as the workflow update
// UpdateTurn; each model request is an activity on the session's queue, where the model
// credentials and the session log live; each tool call that is admitted is an activity on
// the tool queue of its workspace. The stages that must be deterministic and ordered run in
// the workflow with the worker's own registry (tool.Registry.Prepare: argument checks,
// pre-execute hooks, approval, guards; the scheduler's barriers, bounded pool and
// model-order commit); the body with its around-execute and post-execute stages runs in the
// tool activity (tool.Registry.PrepareAdmitted, Dispatch, Finalize). Session log events are
// written by local activities on the session's worker, in the same order and with the same
// payloads as an in-process run.
//
// A Host holds what a worker serves (registry, model, session store) and registers the
// workflow and the activities on a Temporal worker; Client starts sessions, sends turns and
// answers approvals.
package durable
