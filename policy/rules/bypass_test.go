package rules_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/tool"
)

// The ways around a "bash(rm *)" deny rule that a lexical splitter let through: each must
// be denied. The commands are also run through dsh call in cmd/dsh (TestDenyBypasses).
var rmBypasses = []string{
	"/bin/rm f1",
	"./rm f1",
	"command rm f1",
	"builtin command rm f1",
	"exec rm f1",
	"env rm f1",
	"env -i PATH=/bin rm f1",
	"env -S 'rm f1'",
	`eval "rm f1"`,
	"eval rm f1",
	"bash -c 'rm f1'",
	"sh -c 'rm f1'",
	"zsh -c 'rm f1'",
	"dash -c 'rm f1'",
	`bash -c "bash -c 'rm f1'"`,
	"bash -lc 'cd . && rm f1'",
	"echo f1 | xargs rm",
	"echo f1 | xargs -n1 rm",
	"echo f1 | xargs sh -c 'rm \"$@\"' _",
	"nohup rm f1",
	"nice rm f1",
	"nice -n 10 rm f1",
	"time rm f1",
	"/usr/bin/time rm f1",
	"timeout 5 rm f1",
	"sudo rm f1",
	"stdbuf -o0 rm f1",
	"setsid rm f1",
	"$(echo rm) f1",
	"`echo rm` f1",
	"$(printf rm) f1",
	`"$(echo rm)" f1`,
	"$CMD f1",
	"${CMD} f1",
	"$'\\x72m' f1",
	"/bin/r? f1",
	"/bin/r[m] f1",
	"{rm,} f1",
	`r\m f1`,
	`"rm" f1`,
	"'r'm f1",
	"source ./script.sh",
	". ./script.sh",
	"bash script.sh",
	"echo 'rm f1' | bash",
	"bash <<< 'rm f1'",
	"eval \"$(echo rm f1)\"",
	"find . -name f1 -exec rm {} \\;",
	"find . -name f1 -execdir rm {} +",
	"trap 'rm f1' EXIT",
	"watch -n1 rm f1",
	"flock /tmp/lock rm f1",
	"flock /tmp/lock -c 'rm f1'",
	"busybox rm f1",
	"sudo -u root env FOO=1 nohup nice -n 5 /bin/rm f1",
	"ls; rm f1",
	"ls && rm f1",
	"false || rm f1",
	"ls | rm f1",
	"(rm f1)",
	"{ rm f1; }",
	"echo $(rm f1)",
	"echo \"$(rm f1)\"",
	"cat <(rm f1)",
	"echo > >(rm f1)",
	"f() { rm f1; }; f",
	"if true; then rm f1; fi",
	"for i in 1; do rm f1; done",
	"while true; do rm f1; break; done",
	"case x in x) rm f1;; esac",
	"X=$(rm f1) ls",
	"ls > $(rm f1)",
	"cat <<EOF\n$(rm f1)\nEOF",
	"echo ${X:-$(rm f1)}",
	"echo $(( $(rm f1) + 1 ))",
	"[[ -n $(rm f1) ]]",
	"coproc rm f1",
	"shopt -s expand_aliases\nalias x='rm'\nx f1",
	"hash -p /bin/rm x; x f1",
	"rm f1 'unterminated",
	"rm f1; (",
	"rm\tf1",
	"rm \\\nf1",
}

func TestDenyBypasses(t *testing.T) {
	r, err := rules.New(rules.Config{Deny: []string{"bash(rm *)"}, Workspace: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range rmBypasses {
		v := r.Evaluate("bash", js(t, fmt.Sprintf(`{"command":%q}`, cmd)))
		if v.Kind != rules.Denied || v.Rule != "bash(rm *)" {
			t.Errorf("%q: %v %s, want denied", cmd, v.Kind, v.Rule)
		}
	}
}

// TestUnresolvable pins what a command that cannot be checked statically gets: deny and ask
// rules count as matching it (the reason says why), allow rules never do.
func TestUnresolvable(t *testing.T) {
	cmd := func(c string) string { return fmt.Sprintf(`{"command":%q}`, c) }
	tests := []struct {
		cfg        rules.Config
		command    string
		want       string
		unresolved string // a part of the reason's explanation, "" when none
	}{
		{rules.Config{Deny: []string{"bash(git push*)"}}, "$(echo git) push", "deny bash(git push*)", "the program $(echo git) is computed at run time"},
		{rules.Config{Deny: []string{"read(**/.env)", "bash(curl *)", "bash(rm *)"}}, "eval \"$X\"", "deny bash(curl *)", "eval runs a string computed at run time"},
		{rules.Config{Deny: []string{"bash(curl *)"}}, "source env.sh", "deny bash(curl *)", "source: it runs the commands of a file"},
		{rules.Config{Ask: []string{"bash(git push*)"}}, "$X", "ask bash(git push*)", "the program $X is computed at run time"},
		{rules.Config{Ask: []string{"bash(git push*)"}, Deny: []string{"bash(rm *)"}}, "$X", "deny bash(rm *)", "computed at run time"},
		{rules.Config{Allow: []string{"bash(*)", "bash"}}, "$X f1", "allow bash", ""}, // a rule without argument still allows every call
		{rules.Config{Allow: []string{"bash(*)"}}, "$X f1", "none", ""},
		{rules.Config{Allow: []string{"bash(*)"}}, "eval \"$(cat cmd)\"", "none", ""},
		{rules.Config{Allow: []string{"bash(*)"}}, "echo 'unterminated", "none", ""},
		{rules.Config{Allow: []string{"bash(echo *)"}}, "echo x | sh", "none", ""},
		{rules.Config{Allow: []string{"bash(*)"}}, "ls; rm f1", "allow bash(*)", ""},
		// A rule that matches a command seen statically is reported without the explanation.
		{rules.Config{Deny: []string{"bash(rm *)"}}, "rm f1; $X", "deny bash(rm *)", ""},
		// A deny rule without an argument pattern is not a command rule: it denies anyway.
		{rules.Config{Deny: []string{"read(*)"}}, "$X", "none", ""},
	}
	for _, tt := range tests {
		tt.cfg.Workspace = "/ws"
		r, err := rules.New(tt.cfg)
		if err != nil {
			t.Fatal(err)
		}
		v := r.Evaluate("bash", js(t, cmd(tt.command)))
		if got := verdictString(v); got != tt.want {
			t.Errorf("%+v %q: %s, want %s", tt.cfg, tt.command, got, tt.want)
		}
		if !strings.Contains(v.Unresolved, tt.unresolved) || (tt.unresolved == "") != (v.Unresolved == "") {
			t.Errorf("%q: unresolved %q, want %q", tt.command, v.Unresolved, tt.unresolved)
		}
		if tt.unresolved != "" {
			want := "the command cannot be checked before it runs (" + v.Unresolved + "), so the rule is taken to match"
			if reason := v.Reason("bash"); !strings.HasSuffix(reason, want) {
				t.Errorf("%q: reason %q", tt.command, reason)
			}
		}
	}
}

// TestPwshCommands pins that a pwsh command is read with the shell grammar, and what of
// PowerShell's syntax that cannot read counts as unresolvable.
func TestPwshCommands(t *testing.T) {
	cmd := func(c string) string { return fmt.Sprintf(`{"command":%q}`, c) }
	runEval(t, rules.Config{Allow: []string{"pwsh(Get-ChildItem*)"}, Deny: []string{"pwsh(Remove-Item *)"}}, []evalCase{
		{"pwsh", cmd("Get-ChildItem -Recurse"), "allow pwsh(Get-ChildItem*)"},
		{"pwsh", cmd("Get-ChildItem; Remove-Item f1"), "deny pwsh(Remove-Item *)"},
		{"pwsh", cmd("Get-ChildItem (Get-Location)"), "deny pwsh(Remove-Item *)"}, // not shell syntax
	})
}

// TestAllowSeesEverything pins allow rules: every program the command runs, after
// unwrapping, must be allowed, wherever it appears.
func TestAllowSeesEverything(t *testing.T) {
	cfg := rules.Config{Allow: []string{"bash(git status)", "bash(go test *)", "bash(ls*)", "bash(echo *)", "bash(./build.sh*)"}}
	cmd := func(c string) string { return fmt.Sprintf(`{"command":%q}`, c) }
	runEval(t, cfg, []evalCase{
		{"bash", cmd("git status"), "allow bash(git status)"},
		{"bash", cmd("git status; rm f1"), "none"},
		{"bash", cmd("git status $(rm f1)"), "none"},
		{"bash", cmd("git status `rm f1`"), "none"},
		{"bash", cmd("git status && echo $(rm f1)"), "none"},
		{"bash", cmd("git status > >(rm f1)"), "none"},
		{"bash", cmd("ls <(rm f1)"), "none"},
		{"bash", cmd("echo ${X:-$(rm f1)}"), "none"},
		{"bash", cmd("X=$(rm f1) git status"), "none"},
		{"bash", cmd("f() { rm f1; }; ls"), "none"},
		{"bash", cmd("if ls; then rm f1; fi"), "none"},
		// Wrappers are judged by the command they run.
		{"bash", cmd("timeout 60 go test ./..."), "allow bash(go test *)"},
		{"bash", cmd("nice -n 5 env GOFLAGS=-race go test ./..."), "allow bash(go test *)"},
		{"bash", cmd("bash -c 'go test ./... && ls'"), "allow bash(go test *)"},
		{"bash", cmd("eval 'ls -la'"), "allow bash(ls*)"},
		{"bash", cmd("timeout 60 rm f1"), "none"},
		{"bash", cmd("bash -c 'ls; rm f1'"), "none"},
		{"bash", cmd("ls | xargs rm"), "none"},
		{"bash", cmd("ls | xargs echo"), "allow bash(ls*)"},
		{"bash", cmd("find . -exec rm {} \\;"), "none"},
		// A program's directory is kept for allow: "ls" is not "/tmp/x/ls".
		{"bash", cmd("/tmp/x/ls"), "none"},
		{"bash", cmd("./build.sh --fast"), "allow bash(./build.sh*)"},
	})
}

// TestAllowThroughPipeline runs allow rules in a registry where a later hook asks about
// every call, as an approval policy would: "allow: bash(git status)" pre-approves exactly
// git status, and a command hiding another program behind it is still asked about (and,
// with no approval service, refused without running).
func TestAllowThroughPipeline(t *testing.T) {
	for _, tt := range []struct {
		command string
		runs    int32
	}{
		{"git status", 1},
		{"git status; rm f1", 0},
		{"git status $(rm f1)", 0},
		{"git status `rm f1`", 0},
		{"git status && bash -c 'rm f1'", 0},
		{"git status | xargs rm", 0},
		{"$(echo git) status", 0},
	} {
		p := newPipeline(t, rules.Config{Allow: []string{"bash(git status)"}})
		p.reg.OnPreExecute(laterHook(ptr(tool.Ask("every command needs approval"))))
		res := p.run(tt.command, nil)
		if got := p.runs.Load(); got != tt.runs || res.IsError != (tt.runs == 0) {
			t.Errorf("%q: ran %d times, result %s", tt.command, got, resultJSON(t, res))
		}
	}
}

// TestEveryWrapper runs rm through each wrapper and shell the package documentation lists.
func TestEveryWrapper(t *testing.T) {
	r, err := rules.New(rules.Config{Deny: []string{"bash(rm *)"}, Allow: []string{"bash(*)"}, Workspace: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{
		"command -p rm f1", "builtin rm f1", "exec -a x rm f1", "exec -cl rm f1",
		"env -u HOME -C /tmp A=1 rm f1", "env --split-string='rm f1'", "env -- rm f1", "env - rm f1",
		"nohup rm f1", "nice --adjustment=3 rm f1", "time -p rm f1", "/usr/bin/time -o log rm f1",
		"timeout --signal=KILL 1m rm f1", "timeout -k 1 5 rm f1", "stdbuf -i0 -e 0 rm f1", "setsid --fork rm f1",
		"xargs rm", "xargs -a list -d '\\n' rm", "xargs --max-args=1 rm", "sudo -E -- rm f1", "sudo --user=root rm f1",
		"doas rm f1", "doas -u root rm f1", "su -c 'rm f1'", "su - root -c 'rm f1'", "su --command='rm f1' root",
		"script -qc 'rm f1' /dev/null", "script --command 'rm f1'", "flock -w 5 lock rm f1", "flock lock --command 'rm f1'",
		"watch 'rm f1'", "watch --interval 2 rm f1", "chroot / rm f1", "chroot --userspec=1:1 / rm f1",
		"ionice -c 3 rm f1", "taskset 0x1 rm f1", "taskset -c 0 rm f1", "unbuffer rm f1",
		"strace -f -o log rm f1", "ltrace -o log rm f1", "fakeroot -- rm f1", "unshare -r rm f1", "unshare --wd /tmp rm f1",
		"proxychains rm f1", "proxychains4 -f cfg rm f1", "torsocks -u x rm f1", "busybox rm f1",
		"valgrind --leak-check=full rm f1", "firejail --noprofile rm f1", "catchsegv rm f1", "caffeinate -i rm f1",
		"sg wheel 'rm f1'", "sg wheel -c 'rm f1'", "dbus-run-session -- rm f1",
		"find . -ok rm {} \\;", "find . -okdir rm {} +", "trap -- 'rm f1' INT",
		"sh -c 'rm f1'", "bash -c 'rm f1'", "zsh -c 'rm f1'", "dash -c 'rm f1'", "ksh -c 'rm f1'", "mksh -c 'rm f1'",
		"ash -c 'rm f1'", "yash -c 'rm f1'", "posh -c 'rm f1'", "rbash -c 'rm f1'", "bash --norc -o errexit -c 'rm f1'",
	} {
		if v := r.Evaluate("bash", js(t, fmt.Sprintf(`{"command":%q}`, cmd))); v.Kind != rules.Denied || v.Unresolved != "" {
			t.Errorf("%q: %v (unresolved %q), want denied by what it runs", cmd, v.Kind, v.Unresolved)
		}
	}
	// Wrappers that run nothing, and are their own program.
	for _, cmd := range []string{"command -v rm", "sudo -l", "ionice -p 1", "taskset -p 1", "trap -l", "trap - INT", "bash --version", "env", "nohup"} {
		if v := r.Evaluate("bash", js(t, fmt.Sprintf(`{"command":%q}`, cmd))); v.Kind != rules.Allowed {
			t.Errorf("%q: %v (%s), want allowed", cmd, v.Kind, v.Unresolved)
		}
	}
}
