package shell

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/dsh-go/dsh/jsonv"
)

// streamText is a stream's text with the truncation notice naming the spill file.
func streamText(s Stream) string {
	if !s.Truncated {
		return s.Text
	}
	where := s.SpillPath
	if where == "" {
		where = "(unavailable)"
	}
	return s.Text + "\n[output truncated; full output: " + where + "]"
}

// renderForeground is the text the model reads for a finished foreground command: stdout,
// a "[stderr]" section, "(no output)" when both are empty, then the markers, each on its
// own line, the exit marker last. A non-zero exit is reported, not an error.
func renderForeground(v *Foreground) string {
	body := streamText(v.Stdout)
	if errText := streamText(v.Stderr); errText != "" {
		if body != "" && !strings.HasSuffix(body, "\n") {
			body += "\n"
		}
		body += "[stderr]\n" + errText
	}
	if body == "" {
		body = "(no output)"
	}
	var markers []string
	if v.Sandbox != nil && v.Sandbox.Denied {
		markers = append(markers, denialMarker(v.Sandbox.Mode))
	}
	// A command may trap SIGTERM and exit 0 after a timeout: the timeout is still reported.
	if v.TimedOut {
		markers = append(markers, "[timed out after "+formatMs(v.TimeoutMs)+"ms]")
	}
	switch {
	case v.Signal != nil:
		markers = append(markers, "[killed by signal: "+*v.Signal+"]")
	case v.ExitCode != nil && *v.ExitCode != 0:
		markers = append(markers, "[exit code: "+strconv.Itoa(*v.ExitCode)+"]")
	}
	if len(markers) == 0 {
		return body
	}
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return body + strings.Join(markers, "\n")
}

// formatMs formats milliseconds as JavaScript prints numbers.
func formatMs(ms float64) string {
	b, err := jsonv.Marshal(ms)
	if err != nil {
		return strconv.FormatFloat(ms, 'f', -1, 64)
	}
	return string(b)
}

var (
	signalMarker = regexp.MustCompile(`\n\[killed by signal: ([^\]\n]+)\]$`)
	exitMarker   = regexp.MustCompile(`\n\[exit code: (\d+)\]$`)
)

// ExitStatus is the exit status recovered from a rendered bash result.
type ExitStatus struct {
	Body     string // the text without the consumed marker
	ExitCode int    // valid when Signal is empty
	Signal   string
}

// ParseExitStatus splits rendered bash output into its body and exit status: a trailing
// "[killed by signal: X]" gives Signal, a trailing "[exit code: N]" gives ExitCode, and no
// marker means exit code 0. Only the final line counts, so output that merely mentions a
// marker is not mistaken for one. Other markers (timeout, sandbox) stay in the body.
func ParseExitStatus(text string) ExitStatus {
	if m := signalMarker.FindStringSubmatchIndex(text); m != nil {
		return ExitStatus{Body: text[:m[0]], Signal: text[m[2]:m[3]]}
	}
	if m := exitMarker.FindStringSubmatchIndex(text); m != nil {
		if n, err := strconv.Atoi(text[m[2]:m[3]]); err == nil {
			return ExitStatus{Body: text[:m[0]], ExitCode: n}
		}
	}
	return ExitStatus{Body: text}
}
