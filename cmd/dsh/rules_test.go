package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDenyBypassesEndToEnd runs the reported ways around a "bash(rm *)" deny rule through
// the built dsh binary: each call fails with the rule's denial, and the file it would have
// removed is still there. The same commands without the rule do remove it, so the test
// would see a rule that lets them through.
func TestDenyBypassesEndToEnd(t *testing.T) {
	bin := buildDsh(t)
	home := t.TempDir()
	call := func(t *testing.T, command string, deny bool) (map[string]any, string, bool) {
		t.Helper()
		ws := t.TempDir()
		target := filepath.Join(ws, "f1")
		if err := os.WriteFile(target, []byte("keep\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal(map[string]string{"command": command, "description": "try to remove f1"})
		argv := []string{"call", "--json", "bash", string(args)}
		if deny {
			argv = append(argv, "--deny", "bash(rm *)")
		}
		cmd := exec.Command(bin, argv...)
		cmd.Dir = ws
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "DSH_HOME=" + filepath.Join(home, ".dsh"), "TERM=dumb"}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var res map[string]any
		if jerr := json.Unmarshal([]byte(out.String()), &res); jerr != nil {
			t.Fatalf("%q: not one JSON result (%v, %v):\nstdout %s\nstderr %s", command, jerr, err, out.String(), errb.String())
		}
		_, statErr := os.Stat(target)
		return res, errb.String(), statErr == nil
	}
	bypasses := []string{
		"/bin/rm f1",
		"command rm f1",
		"env rm f1",
		`eval "rm f1"`,
		"bash -c 'rm f1'",
		"echo f1 | xargs rm",
		"nohup rm f1",
		"$(echo rm) f1",
		"`echo rm` f1",
		"sh -c 'cd . && exec /bin/rm f1'",
		"find . -name f1 -exec rm {} \\;",
		"X=rm; $X f1",
	}
	for _, command := range bypasses {
		t.Run(command, func(t *testing.T) {
			// Each case has its own workspace; the cases run side by side.
			t.Parallel()
			res, stderr, kept := call(t, command, true)
			msg, _ := res["error"].(map[string]any)["message"].(string)
			if res["isError"] != true || !strings.HasPrefix(msg, `tool "bash" is denied by permission rule "bash(rm *)"`) {
				t.Errorf("result %v (stderr %q), want the rule's denial", res, stderr)
			}
			// The refusal has a stable code.
			if info, _ := res["error"].(map[string]any)["info"].(map[string]any); info["code"] != "PERMISSION_DENIED" || info["name"] != "PermissionDeniedError" {
				t.Errorf("error info %v, want PermissionDeniedError / PERMISSION_DENIED", info)
			}
			if !kept {
				t.Errorf("f1 was removed")
			}
			// Without the rule the same command does remove the file.
			if res, _, kept := call(t, command, false); kept || res["isError"] != false {
				t.Errorf("without the rule: result %v, f1 kept %v", res, kept)
			}
		})
	}
	// What the rule does not name still runs.
	t.Run("unnamed command", func(t *testing.T) {
		t.Parallel()
		if res, _, kept := call(t, "cat f1 | wc -l", true); res["isError"] != false || !kept {
			t.Errorf("cat f1: %v", res)
		}
	})
}
