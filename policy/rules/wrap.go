package rules

import "strings"

// runs says what a command runs besides itself.
type runs int

const (
	runsNothing runs = iota // the command is the program that runs (or a wrapper running nothing)
	runsCommand             // a wrapper: the returned words are the command it runs
	runsShell               // the returned words, joined, are a shell program it runs (sh -c, eval)
	runsBoth                // the command runs, and so do the commands it executes (find -exec)
	runsUnknown             // it runs commands the rules cannot see; the first returned word says what
)

// wrapper describes a command that runs another command given in its arguments.
type wrapper struct {
	// valued lists the short options that take a value, attached ("-uroot") or as the next
	// word ("-u root").
	valued string
	// long lists the long options that take the next word as their value when not written
	// "--name=value".
	long []string
	// operands is how many words come between the options and the command (timeout's
	// duration, chroot's directory).
	operands int
	// assigns: NAME=value words before the command set its environment (env, sudo).
	assigns bool
	// numeric: "-N" is an option (nice -10).
	numeric bool
	// none lists the short options after which no command runs (command -v, sudo -l).
	none string
	// shell lists the short options whose value is a shell program (su -c, flock -c, env -S).
	shell string
	// longShell lists the long options whose value is a shell program.
	longShell []string
	// bare is what the wrapper does without a command: runsNothing, or runsUnknown when it
	// then reads commands from its standard input or a terminal (sudo -s, su).
	bare runs
}

// wrappers are the commands unwrapped to find the command they run. Options they do not
// list are taken as flags without a value.
var wrappers = map[string]wrapper{
	"builtin": {},
	"command": {none: "vV"},
	"exec":    {valued: "a"},
	"nohup":   {},
	"env": {valued: "uCS", long: []string{"--unset", "--chdir", "--split-string"}, assigns: true,
		shell: "S", longShell: []string{"--split-string"}},
	"nice":     {valued: "n", long: []string{"--adjustment"}, numeric: true},
	"time":     {valued: "fo", long: []string{"--format", "--output"}},
	"timeout":  {valued: "sk", long: []string{"--signal", "--kill-after"}, operands: 1},
	"stdbuf":   {valued: "ioe", long: []string{"--input", "--output", "--error"}},
	"setsid":   {},
	"unbuffer": {},
	"ionice":   {valued: "cnpPu", long: []string{"--class", "--classdata", "--pid", "--pgid", "--uid"}, none: "pPu"},
	"taskset":  {operands: 1, none: "p"},
	"chroot":   {long: []string{"--userspec", "--groups"}, operands: 1},
	"xargs": {valued: "adEILnPs", long: []string{"--arg-file", "--delimiter", "--eof", "--replace", "--max-lines",
		"--max-args", "--max-procs", "--max-chars", "--process-slot-var"}},
	"sudo": {valued: "ugCDhprtTUR", long: []string{"--user", "--group", "--close-from", "--chdir", "--host", "--prompt",
		"--role", "--type", "--command-timeout", "--other-user", "--chroot"}, assigns: true, none: "lvkKeV", bare: runsUnknown},
	"doas":             {valued: "uC", bare: runsUnknown},
	"su":               {operands: 1, valued: "gGsw", long: []string{"--group", "--supp-group", "--shell", "--whitelist-environment"}, shell: "c", longShell: []string{"--command", "--session-command"}, bare: runsUnknown},
	"script":           {valued: "ETIOBm", long: []string{"--echo", "--log-timing", "--log-in", "--log-out", "--log-io", "--logging-format", "--output-limit"}, shell: "c", longShell: []string{"--command"}, bare: runsUnknown},
	"flock":            {valued: "wE", long: []string{"--timeout", "--conflict-exit-code"}, operands: 1, shell: "c", longShell: []string{"--command"}},
	"watch":            {valued: "nq", long: []string{"--interval", "--equexit", "--differences"}},
	"strace":           {valued: "abeEIoOpPsSuUX", long: []string{"--output", "--attach", "--string-limit", "--user", "--env"}},
	"ltrace":           {valued: "aAeEDFlLnopsSux", long: []string{"--output", "--library"}},
	"fakeroot":         {valued: "lsib", long: []string{"--lib", "--faked"}},
	"unshare":          {valued: "SGRwc", long: []string{"--setuid", "--setgid", "--root", "--wd", "--propagation", "--setgroups", "--map-user", "--map-group"}},
	"busybox":          {},
	"proxychains":      {valued: "f"},
	"proxychains4":     {valued: "f"},
	"torsocks":         {valued: "uapP", long: []string{"--user", "--pass", "--address", "--port"}},
	"dbus-run-session": {long: []string{"--config-file", "--dbus-daemon"}},
	"catchsegv":        {},
	"valgrind":         {},
	"firejail":         {},
	"sg":               {operands: 1, shell: "c"},
	"caffeinate":       {valued: "tw"},
}

// shells are the shells whose "-c STRING" is parsed as a shell program.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "yash": true, "posh": true, "rbash": true}

// unwrap returns what the command name with the arguments args runs (see runs) and, for
// runsUnknown, why the rules cannot see it.
func unwrap(name string, args []word) ([]word, runs, string) {
	switch {
	case shells[name]:
		return shellArgs(args)
	case name == "eval":
		if len(args) == 0 {
			return nil, runsNothing, ""
		}
		return args, runsShell, ""
	case name == "source" || name == ".":
		return nil, runsUnknown, "it runs the commands of a file"
	case name == "trap":
		return trapArgs(args)
	case name == "alias" || name == "hash" || name == "enable" || name == "mapfile" || name == "readarray":
		// alias NAME=…, hash -p PATH NAME, enable -f FILE NAME and mapfile -C COMMAND make
		// later words run something the rules cannot follow.
		for _, a := range args {
			if !a.static {
				return nil, runsUnknown, computed(a)
			}
			if name == "alias" && strings.Contains(a.val, "=") || name != "alias" && len(a.val) > 1 && a.val[0] == '-' &&
				strings.ContainsAny(a.val[1:], map[string]string{"hash": "p", "enable": "f", "mapfile": "C", "readarray": "C"}[name]) {
				return nil, runsUnknown, "it makes a name run a command the rules cannot follow"
			}
		}
		return nil, runsNothing, ""
	case name == "find":
		for _, w := range args {
			if w.static && isExec(w.val) {
				return nil, runsBoth, ""
			}
		}
		return nil, runsNothing, ""
	}
	w, ok := wrappers[name]
	if !ok {
		return nil, runsNothing, ""
	}
	rest, r, why := wrapped(w, args)
	if (name == "watch" || name == "sg") && r == runsCommand {
		return rest, runsShell, "" // they run their arguments with sh -c
	}
	return rest, r, why
}

// computed is the reason given for a wrapper argument computed at run time.
func computed(w word) string {
	return "its argument " + w.raw + " is computed at run time and may stand for any options or command"
}

// wrapped skips a wrapper's options, assignments and operands and returns the command it
// runs.
func wrapped(w wrapper, args []word) ([]word, runs, string) {
	// shellValue returns the shell program given as an option's value: attached, or the
	// words that follow.
	shellValue := func(attached string, rest []word) ([]word, runs, string) {
		if attached != "" {
			return append([]word{{raw: attached, val: attached, static: true}}, rest...), runsShell, ""
		}
		if len(rest) == 0 {
			return nil, runsNothing, ""
		}
		return rest, runsShell, ""
	}
	i := 0
	for i < len(args) {
		a := args[i]
		if !a.static {
			return nil, runsUnknown, computed(a)
		}
		v := a.val
		switch {
		case v == "":
			goto operands
		case v == "--":
			i++
			goto operands
		case v == "-":
			i++ // env's and su's "-"
		case strings.HasPrefix(v, "--"):
			name, value, hasValue := strings.Cut(v, "=")
			if contains(w.longShell, name) {
				return shellValue(value, args[i+1:])
			}
			if !hasValue && contains(w.long, name) {
				i++
			}
			i++
		case v[0] == '-':
			if w.numeric && v[1] >= '0' && v[1] <= '9' {
				i++
				continue
			}
			for j := 1; j < len(v); j++ {
				c := v[j]
				if strings.IndexByte(w.shell, c) >= 0 {
					return shellValue(v[j+1:], args[i+1:])
				}
				if strings.IndexByte(w.none, c) >= 0 {
					return nil, runsNothing, ""
				}
				if strings.IndexByte(w.valued, c) >= 0 {
					if j == len(v)-1 {
						i++ // the value is the next word
					}
					break
				}
			}
			i++
		case w.assigns && isAssignment(v):
			i++
		default:
			goto operands
		}
	}
operands:
	for n := 0; n < w.operands && i < len(args); n++ {
		if !args[i].static {
			return nil, runsUnknown, computed(args[i])
		}
		i++
	}
	// An option after the operands (flock FILE -c STRING).
	if i < len(args) && args[i].static && strings.HasPrefix(args[i].val, "-") && len(args[i].val) > 1 {
		v := args[i].val
		name, value, _ := strings.Cut(v, "=")
		if contains(w.longShell, name) {
			return shellValue(value, args[i+1:])
		}
		if !strings.HasPrefix(v, "--") && strings.IndexByte(w.shell, v[1]) >= 0 {
			return shellValue(v[2:], args[i+1:])
		}
	}
	if i >= len(args) {
		if w.bare == runsUnknown {
			return nil, runsUnknown, "without a command it starts a shell reading commands the rules cannot see"
		}
		return nil, w.bare, ""
	}
	return args[i:], runsCommand, ""
}

// shellArgs reads a shell's arguments: "-c STRING" (in any option cluster, "-ec") runs
// STRING; a script file, or no operand at all (the shell reads its standard input), runs
// commands the rules cannot see.
func shellArgs(args []word) ([]word, runs, string) {
	command := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.static {
			return nil, runsUnknown, computed(a)
		}
		v := a.val
		switch {
		case v == "--version" || v == "--help":
			return nil, runsNothing, ""
		case v == "--rcfile" || v == "--init-file":
			i++
		case strings.HasPrefix(v, "--"):
		case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
			for j := 1; j < len(v); j++ {
				switch v[j] {
				case 'c':
					command = true
				case 'o', 'O':
					if j == len(v)-1 {
						i++
					}
				case 's':
					return nil, runsUnknown, "it runs commands from its standard input"
				}
			}
		default:
			if command {
				return args[i : i+1], runsShell, ""
			}
			return nil, runsUnknown, "it runs the script " + a.raw
		}
	}
	if command {
		return nil, runsNothing, "" // "-c" without a string is an error
	}
	return nil, runsUnknown, "it runs commands from its standard input"
}

// trapArgs reads trap's arguments: "trap ACTION SIGNAL…" runs ACTION as a shell program
// when a signal arrives or the shell exits.
func trapArgs(args []word) ([]word, runs, string) {
	i := 0
	for i < len(args) && args[i].static && strings.HasPrefix(args[i].val, "-") && len(args[i].val) > 1 {
		if args[i].val == "--" {
			i++
			break
		}
		return nil, runsNothing, "" // -l, -p, -P print
	}
	if len(args)-i < 2 {
		return nil, runsNothing, "" // "trap" or "trap SIGNAL": prints or resets
	}
	action := args[i]
	if !action.static {
		return nil, runsUnknown, "its action " + action.raw + " is computed at run time"
	}
	if action.val == "-" || action.val == "" {
		return nil, runsNothing, ""
	}
	return args[i : i+1], runsShell, ""
}

// isExec reports whether a find argument executes a command.
func isExec(v string) bool {
	return v == "-exec" || v == "-execdir" || v == "-ok" || v == "-okdir"
}

// findCommands returns the commands a find command line executes: the words after each
// -exec, -execdir, -ok or -okdir up to its ";" or "+".
func findCommands(args []word) [][]word {
	var out [][]word
	for i := 0; i < len(args); i++ {
		if !args[i].static || !isExec(args[i].val) {
			continue
		}
		j := i + 1
		for j < len(args) && !(args[j].static && (args[j].val == ";" || args[j].val == "+")) {
			j++
		}
		if j > i+1 {
			out = append(out, args[i+1:j])
		}
		i = j
	}
	return out
}

// isAssignment reports whether a word is a variable assignment NAME=value.
func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	for i := 0; i < eq; i++ {
		c := w[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
