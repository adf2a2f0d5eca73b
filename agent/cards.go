package agent

import (
	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/tool"
)

// CallCard returns the pending UI card of a call (docs/behaviour.md §12): the tool's own card when def
// presents one for args, else the generic card titled with the tool name and showing the
// raw arguments. def may be nil (an unknown tool); a presenter that panics gets the
// generic card too.
func CallCard(def *tool.Definition, name string, args any) card.Call {
	if def != nil && def.PresentCall != nil {
		if c := presentCall(def, args); c != nil {
			return *c
		}
	}
	return card.Call{Card: card.Generic, Title: name, Kind: card.KindOther, RawInput: args}
}

func presentCall(def *tool.Definition, args any) (c *card.Call) {
	defer func() {
		if recover() != nil {
			c = nil
		}
	}()
	return def.PresentCall(args)
}

// ResultCard returns the completed UI card of a result (docs/behaviour.md §12): the tool's own card when
// def presents one for args and the durable result, else the generic card with the tool
// name and the result content. It depends only on its inputs, so a log replay renders the
// card the live run did.
func ResultCard(def *tool.Definition, name string, args any, res card.ToolResult) card.Result {
	if def != nil && def.PresentResult != nil {
		if c := presentResult(def, args, res); c != nil {
			return *c
		}
	}
	return card.Result{Card: card.Generic, Title: name, Content: content.Clone(res.Content)}
}

func presentResult(def *tool.Definition, args any, res card.ToolResult) (c *card.Result) {
	defer func() {
		if recover() != nil {
			c = nil
		}
	}()
	return def.PresentResult(args, res)
}

// cardResult is the durable part of res a result card is computed from.
func cardResult(res *tool.Result) card.ToolResult {
	return card.ToolResult{Content: res.Content, IsError: res.IsError, Meta: res.Meta}
}
