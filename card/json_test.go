package card

import (
	"encoding/json"
	"testing"

	"github.com/dsh-go/dsh/content"
)

func TestCardJSONShapes(t *testing.T) {
	old := "a"
	zero := 0
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"generic call", &Call{Card: Generic, Title: "Read a.txt", Kind: KindRead, Locations: []FileLocation{{Path: "a.txt", Line: 1}}},
			`{"card":"generic","title":"Read a.txt","kind":"read","locations":[{"path":"a.txt","line":1}]}`},
		{"terminal call", &Call{Card: Terminal, Title: "ls", Description: "list", Cwd: "sub"},
			`{"card":"terminal","title":"ls","description":"list","cwd":"sub"}`},
		{"diff call create", &Call{Card: Diff, Title: "Write b", Diffs: []FileDiff{{Path: "b", NewText: "x"}}},
			`{"card":"diff","title":"Write b","diffs":[{"path":"b","oldText":null,"newText":"x"}]}`},
		{"diff result", &Result{Card: Diff, Diffs: []FileDiff{{Path: "b", OldText: &old, NewText: "x"}}},
			`{"card":"diff","diffs":[{"path":"b","oldText":"a","newText":"x"}]}`},
		{"empty read keeps zeros", &Result{Card: Read, Path: "e.txt", Offset: 1},
			`{"card":"read","path":"e.txt","offset":1,"lines":[],"totalLines":0}`},
		{"search paths", &Result{Card: Search, Shape: "paths", Paths: []string{"a"}, Total: 1},
			`{"card":"search","shape":"paths","paths":["a"],"truncated":false,"total":1}`},
		{"search matches", &Result{Card: Search, Shape: "matches", Files: []SearchFile{{Path: "a", Matches: []SearchMatch{{LineNumber: 3, Line: "x"}}}}, Truncated: true, Total: 9},
			`{"card":"search","shape":"matches","files":[{"path":"a","matches":[{"lineNumber":3,"line":"x"}]}],"truncated":true,"total":9}`},
		{"terminal exit 0", &Result{Card: Terminal, Output: "hi", ExitCode: &zero},
			`{"card":"terminal","output":"hi","exitCode":0}`},
		{"generic result", &Result{Card: Generic, Content: content.Texts("x")},
			`{"card":"generic","content":[{"type":"text","text":"x"}]}`},
		{"web fetch", &Result{Card: Web, WebKind: "fetch", URL: "https://x", StatusCode: 200},
			`{"card":"web","kind":"fetch","url":"https://x","statusCode":200,"truncated":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}
