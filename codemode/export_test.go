package codemode

// SetSubmitHook makes r call fn with the sub-call id of every binding call it queues, so
// that tests can order their moves after a submission.
func SetSubmitHook(r *Runner, fn func(id string)) { r.hooks.submit = fn }

// SetEnterHook makes r call fn with the tool name at the very start of every binding
// call, so that tests can delay calls before they are submitted.
func SetEnterHook(r *Runner, fn func(name string)) { r.hooks.enter = fn }

// SetReleasedHook makes r call fn with the sequence number of every numbered binding call
// once it was queued or rejected.
func SetReleasedHook(r *Runner, fn func(seq uint64)) { r.hooks.released = fn }

// SetParkedHook makes r call fn with the sequence number of every numbered binding call
// that has to wait for an earlier call before it is queued.
func SetParkedHook(r *Runner, fn func(seq uint64)) { r.hooks.parked = fn }

// SetIdleHook makes r call fn each time a run's lane driver has nothing it may do and waits
// for a change, with the calls it left pending (not started) and settled (awaiting an
// earlier call's commit), so that a test can tell a call the lane declined to start from
// one it has not looked at yet.
func SetIdleHook(r *Runner, fn func(pending, settled []string)) { r.hooks.idle = fn }

// SetHandedOverHook makes r call fn with the sub-call id of every solo call (one submitted
// to a quiescent lane and carried through it by its own binding call) that settled while
// the lane's driver was taking a step, and so left its commit to the driver.
func SetHandedOverHook(r *Runner, fn func(id string)) { r.hooks.handedOver = fn }
