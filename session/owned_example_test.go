package session_test

import (
	"fmt"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
)

// A Code Mode sub-call's two events handed over to a log: the arguments, a jsonv value
// nobody changes afterwards, are kept without a copy.
func ExampleCodeDispatch_OwnedEvent() {
	log := session.NewMemory(func() time.Time { return time.UnixMilli(1700000000000) })
	args := jsonv.NewObject(jsonv.Member{Name: "text", Value: "hi"})
	start := session.CodeDispatchStart{RootCallID: "c1", ParentCallID: "c1", SubCallID: "c1:code:1", Name: "echo", Arguments: args}
	if _, err := log.Append(start.OwnedEvent()); err != nil {
		panic(err)
	}
	settle := session.CodeDispatch{RootCallID: "c1", ParentCallID: "c1", SubCallID: "c1:code:1", Name: "echo", Arguments: args,
		Content: content.Texts("hi")}
	e, err := log.Append(settle.OwnedEvent())
	if err != nil {
		panic(err)
	}
	line, _ := session.EncodeEvent(e)
	fmt.Println(string(line))
	// Output: {"type":"tool/code-dispatch","seq":1,"time":1700000000000,"data":{"rootCallId":"c1","parentCallId":"c1","subCallId":"c1:code:1","name":"echo","arguments":{"text":"hi"},"isError":false,"content":[{"type":"text","text":"hi"}]}}
}

// The events of a program's binding calls built through one DispatchBoxes, as codemode's
// logs build them: the same events OwnedEvent builds, the ids and name of the start event
// shared with the settle event that follows it.
func ExampleDispatchBoxes() {
	log := session.NewMemory(func() time.Time { return time.UnixMilli(1700000000000) })
	var boxes session.DispatchBoxes
	for _, sub := range []string{"c1:code:1", "c1:code:2"} {
		args := jsonv.NewObject(jsonv.Member{Name: "text", Value: sub})
		start := session.CodeDispatchStart{RootCallID: "c1", ParentCallID: "c1", SubCallID: sub, Name: "echo", Arguments: args}
		if _, err := log.Append(boxes.StartEvent(start)); err != nil {
			panic(err)
		}
		settle := session.CodeDispatch{RootCallID: "c1", ParentCallID: "c1", SubCallID: sub, Name: "echo", Arguments: args,
			Content: content.Texts(sub)}
		if _, err := log.Append(boxes.SettleEvent(settle)); err != nil {
			panic(err)
		}
	}
	for _, e := range log.Events() {
		line, _ := session.EncodeEvent(e)
		fmt.Println(string(line))
	}
	// Output:
	// {"type":"tool/code-dispatch-start","seq":0,"time":1700000000000,"data":{"rootCallId":"c1","parentCallId":"c1","subCallId":"c1:code:1","name":"echo","arguments":{"text":"c1:code:1"}}}
	// {"type":"tool/code-dispatch","seq":1,"time":1700000000000,"data":{"rootCallId":"c1","parentCallId":"c1","subCallId":"c1:code:1","name":"echo","arguments":{"text":"c1:code:1"},"isError":false,"content":[{"type":"text","text":"c1:code:1"}]}}
	// {"type":"tool/code-dispatch-start","seq":2,"time":1700000000000,"data":{"rootCallId":"c1","parentCallId":"c1","subCallId":"c1:code:2","name":"echo","arguments":{"text":"c1:code:2"}}}
	// {"type":"tool/code-dispatch","seq":3,"time":1700000000000,"data":{"rootCallId":"c1","parentCallId":"c1","subCallId":"c1:code:2","name":"echo","arguments":{"text":"c1:code:2"},"isError":false,"content":[{"type":"text","text":"c1:code:2"}]}}
}
