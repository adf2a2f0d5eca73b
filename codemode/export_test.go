package codemode

// SetSubmitHook makes r call fn with the sub-call id of every binding call it queues, so
// that tests can order their moves after a submission.
func SetSubmitHook(r *Runner, fn func(id string)) { r.onSubmit = fn }
