package tool

import (
	"fmt"
	"unicode/utf8"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

// Result is the outcome of one tool call (docs/behaviour.md §5.1). A success (IsError false) carries the
// canonical Value and never an Error; a failure carries Error and never a Value or
// ConcludesTurn. Content is what the model sees; Meta is the persisted presentation meta.
type Result struct {
	IsError            bool
	ConcludesTurn      bool // next to IsError: a result with a content block fits 240 bytes
	Value              any  // success: the canonical value (a jsonv value; nil is JSON null)
	Error              *Failure
	Content            []content.Block
	Meta               any // the presentation meta (a jsonv value), nil when absent
	AdditionalContexts []content.Message
}

// Failure describes why a call failed. Info is set only for coded errors and registry
// aborts and timeouts; denials carry only a message.
type Failure struct {
	Message string
	Info    *Info
}

// Success returns a success result with the given canonical value and content.
func Success(value any, blocks []content.Block) *Result {
	return &Result{Value: value, Content: blocks}
}

// Fail returns the generic failure result for err: content "Error: <message>" and
// error.info when err carries a code (docs/behaviour.md §5.3).
func Fail(err error) *Result {
	msg := ErrorMessage(err)
	return &Result{
		IsError: true,
		Error:   &Failure{Message: msg, Info: InfoOf(err)},
		Content: content.Texts("Error: " + msg),
	}
}

// Denied returns the failure result of a policy denial: no info, content "Error: <reason>".
func Denied(reason string) *Result {
	return &Result{
		IsError: true,
		Error:   &Failure{Message: reason},
		Content: content.Texts("Error: " + reason),
	}
}

// deniedWith is Denied with the error info of a coded denial (nil: none).
func deniedWith(reason string, info *Info) *Result {
	res := Denied(reason)
	if info != nil {
		i := *info
		res.Error.Info = &i
	}
	return res
}

// abortResult is the cancellation result: ABORTED when the body was invoked, else
// ABORTED_BEFORE_DISPATCH.
func abortResult(bodyInvoked bool) *Result {
	if bodyInvoked {
		return Fail(&Error{Name: "AbortError", Code: CodeAborted, Message: "tool call aborted"})
	}
	return Fail(&Error{Name: "AbortError", Code: CodeAbortedBeforeDispatch, Message: "tool call aborted before dispatch"})
}

// AbortedBeforeDispatch returns the result of a call that cancellation kept from running.
// Schedulers use it for the synthetic results of calls they never started.
func AbortedBeforeDispatch() *Result { return abortResult(false) }

// ErrorMessage normalizes anything a body or hook failed with into a message (docs/behaviour.md §5.3):
// an error's Error(), a recovered panic's value, or "<unprintable thrown value>" when even
// formatting it fails.
func ErrorMessage(v any) (msg string) {
	defer func() {
		if recover() != nil {
			msg = "<unprintable thrown value>"
		}
	}()
	switch x := v.(type) {
	case nil:
		return "<nil>"
	case error:
		return x.Error()
	case string:
		return x
	case fmt.Stringer:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

// Clone returns a deep copy of r.
func (r *Result) Clone() *Result {
	if r == nil {
		return nil
	}
	var c *Result
	if len(r.Content) == 1 {
		// The common shape, one block: the copy and its block in one allocation.
		rc := &resultClone{r: *r}
		rc.b[0] = r.Content[0].Clone()
		rc.r.Content = rc.b[:1:1]
		c = &rc.r
	} else {
		c = new(Result)
		*c = *r
		c.Content = content.Clone(r.Content)
	}
	if r.Value != nil {
		c.Value = jsonv.Clone(r.Value)
	}
	if r.Error != nil {
		f := *r.Error
		if f.Info != nil {
			info := *f.Info
			f.Info = &info
		}
		c.Error = &f
	}
	if r.Meta != nil {
		c.Meta = jsonv.Clone(r.Meta)
	}
	c.AdditionalContexts = content.CloneMessages(r.AdditionalContexts)
	return c
}

// resultClone is a copy of a result with one content block, allocated with its block.
type resultClone struct {
	r Result
	b [1]content.Block
}

// JSON returns the result as the object docs/behaviour.md §5.1 shapes: absent keys are absent. Members
// are in the order of the reference's materialized result, so the encoding matches its
// JSON.stringify byte for byte: a failure is {isError, error: {message, info?: {name,
// code}}, content, meta?, additionalContexts?}; a success is {isError, content, meta?,
// additionalContexts?, concludesTurn?, value}.
func (r *Result) JSON() *jsonv.Object {
	o := &jsonv.Object{}
	o.Set("isError", r.IsError)
	if r.IsError {
		e := &jsonv.Object{}
		msg := ""
		if r.Error != nil {
			msg = r.Error.Message
		}
		e.Set("message", msg)
		if r.Error != nil && r.Error.Info != nil {
			e.Set("info", jsonv.NewObject(jsonv.Member{Name: "name", Value: r.Error.Info.Name}, jsonv.Member{Name: "code", Value: r.Error.Info.Code}))
		}
		o.Set("error", e)
	}
	o.Set("content", content.ListValue(r.Content))
	if r.Meta != nil {
		o.Set("meta", jsonv.Clone(r.Meta))
	}
	if len(r.AdditionalContexts) > 0 {
		ctxs := make([]any, len(r.AdditionalContexts))
		for i, m := range r.AdditionalContexts {
			ctxs[i] = messageValue(m)
		}
		o.Set("additionalContexts", ctxs)
	}
	if !r.IsError {
		if r.ConcludesTurn {
			o.Set("concludesTurn", true)
		}
		o.Set("value", jsonv.Clone(r.Value))
	}
	return o
}

// MarshalJSON encodes the result in the docs/behaviour.md §5.1 shape.
func (r *Result) MarshalJSON() ([]byte, error) { return jsonv.Marshal(r.JSON()) }

func messageValue(m content.Message) *jsonv.Object {
	o := &jsonv.Object{}
	o.Set("id", m.ID)
	o.Set("role", string(m.Role))
	o.Set("content", content.ListValue(m.Content))
	if s := m.Source; s != nil {
		so := &jsonv.Object{}
		so.Set("kind", s.Kind)
		for _, kv := range [...]struct{ k, v string }{{"plugin", s.Plugin}, {"form", s.Form}, {"summary", s.Summary}, {"callId", s.CallID}} {
			if kv.v != "" {
				so.Set(kv.k, kv.v)
			}
		}
		o.Set("source", so)
	}
	return o
}

// checkDurable reports whether the durable projection of r (content, contexts, error) is
// lossless JSON (docs/behaviour.md §4.8 step 1); materialize snapshots the meta itself.
func checkDurable(r *Result) error {
	if err := checkBlocks(r.Content); err != nil {
		return err
	}
	for i := range r.AdditionalContexts {
		m := &r.AdditionalContexts[i]
		if !utf8.ValidString(m.ID) || !utf8.ValidString(string(m.Role)) {
			return fmt.Errorf("additional context %d has an invalid UTF-8 id or role", i)
		}
		if err := checkBlocks(m.Content); err != nil {
			return err
		}
		if s := m.Source; s != nil && !(utf8.ValidString(s.Kind) && utf8.ValidString(s.Plugin) && utf8.ValidString(s.Form) && utf8.ValidString(s.Summary) && utf8.ValidString(s.CallID)) {
			return fmt.Errorf("additional context %d has an invalid UTF-8 source", i)
		}
	}
	if e := r.Error; e != nil {
		if !utf8.ValidString(e.Message) {
			return fmt.Errorf("error message is not valid UTF-8")
		}
		if e.Info != nil && !(utf8.ValidString(e.Info.Name) && utf8.ValidString(e.Info.Code)) {
			return fmt.Errorf("error info is not valid UTF-8")
		}
	}
	return nil
}

// checkBlocks reports whether every block is lossless JSON: valid UTF-8 strings, finite
// numbers and lossless extra members.
func checkBlocks(blocks []content.Block) error {
	for i := range blocks {
		b := &blocks[i]
		for _, s := range [...]string{b.Type, b.Text, b.ID, b.Name, b.Arguments, b.ToolCallID} {
			if !utf8.ValidString(s) {
				return fmt.Errorf("content block %d (%s) holds invalid UTF-8", i, b.Type)
			}
		}
		if b.Type == "" {
			return fmt.Errorf("content block %d has no type", i)
		}
		if b.Image != nil && !(utf8.ValidString(b.Image.AttachmentID) && utf8.ValidString(b.Image.MediaType) && utf8.ValidString(b.Image.Name)) {
			return fmt.Errorf("content block %d (image) holds invalid UTF-8", i)
		}
		if b.Extra != nil {
			if err := jsonv.Check(b.Extra); err != nil {
				return fmt.Errorf("content block %d (%s): %w", i, b.Type, err)
			}
		}
		if err := checkBlocks(b.Content); err != nil {
			return err
		}
	}
	return nil
}
