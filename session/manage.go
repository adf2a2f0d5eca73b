package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

// TypeWorkspaceMoved is the ignorable event recording that a session was continued in
// another directory than the one it last ran in: data {"from", "to"} (absolute paths).
// Summarize reads it to tell where a session now belongs.
const TypeWorkspaceMoved = "session/workspace-moved"

// WorkspaceMoved is the payload of a TypeWorkspaceMoved event.
type WorkspaceMoved struct {
	// From is the directory the session last ran in; To the one it continues in.
	From, To string
}

// Event returns the ignorable session/workspace-moved event.
func (m WorkspaceMoved) Event() Event {
	return Event{Type: TypeWorkspaceMoved, Ignorable: true, Data: jsonv.NewObject(
		jsonv.Member{Name: "from", Value: m.From},
		jsonv.Member{Name: "to", Value: m.To},
	)}
}

// AmbiguousError reports a session id prefix that names more than one session.
type AmbiguousError struct {
	// Prefix is what was asked for; Candidates the ids it matches, sorted.
	Prefix     string
	Candidates []string
}

func (e *AmbiguousError) Error() string {
	const shown = 5
	list := e.Candidates
	more := ""
	if len(list) > shown {
		more = fmt.Sprintf(" and %d more", len(list)-shown)
		list = list[:shown]
	}
	return fmt.Sprintf("session id %q is ambiguous: it matches %s%s", e.Prefix, strings.Join(list, ", "), more)
}

// Resolve returns the full id of the session that id names: the session with exactly that
// id, or else the only session whose id starts with it. A prefix matching several sessions
// is an *AmbiguousError listing them; one matching none wraps ErrNotFound.
func (s *FileStore) Resolve(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", errors.New("session: empty session id")
	}
	if _, err := s.find(ctx, id); err == nil {
		return id, nil
	} else if !errors.Is(err, ErrNotFound) {
		return "", err
	}
	infos, err := s.List(ctx)
	if err != nil {
		return "", err
	}
	var matches []string
	for _, in := range infos {
		if in.Err == nil && strings.HasPrefix(in.Header.ID, id) {
			matches = append(matches, in.Header.ID)
		}
	}
	slices.Sort(matches)
	matches = slices.Compact(matches)
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("session %q: %w", id, ErrNotFound)
	case 1:
		return matches[0], nil
	}
	return "", &AmbiguousError{Prefix: id, Candidates: matches}
}

// Remove deletes the stored session id (a full id; see Resolve) and its directory, and the
// project directory when it is left empty. A session open for writing — by this process or
// another — is refused.
func (s *FileStore) Remove(ctx context.Context, id string) error {
	path, err := s.find(ctx, id)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("session: open %q: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return fmt.Errorf("session %q is in use: %w", id, err)
	}
	dir := filepath.Dir(path)
	// Removing while holding the lock keeps a writer from opening the log in between.
	err = os.RemoveAll(dir)
	f.Close()
	if err != nil {
		return fmt.Errorf("session: remove %q: %w", dir, err)
	}
	os.Remove(filepath.Dir(dir)) // only succeeds when the project directory is empty
	return nil
}

// CheckWritable verifies that a session created for cwd could be written: it creates the
// session's project directory and a scratch file in it, then removes the file. Callers use
// it to fail before doing work (calling a model) whose log could not be kept.
func (s *FileStore) CheckWritable(cwd string) error {
	path, err := LogPath(s.root, cwd, "probe", s.opts.Compression)
	if err != nil {
		return fmt.Errorf("session: %w", err)
	}
	project := filepath.Dir(filepath.Dir(path))
	if err := os.MkdirAll(project, 0o700); err != nil {
		return fmt.Errorf("session directory is not writable: %w", err)
	}
	f, err := os.CreateTemp(project, ".probe-*")
	if err != nil {
		return fmt.Errorf("session directory %s is not writable: %w", project, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("session directory %s: %w", project, err)
	}
	return nil
}

// Summary is what a listing says about a session, computed from its events.
type Summary struct {
	// FirstPrompt is the text of the first message the user typed ("" when none).
	FirstPrompt string
	// Turns is the number of turns started.
	Turns int
	// LastEnd is how the last turn ended; its Kind is "" while that turn is open.
	LastEnd EndReason
	// Cwd is the directory the session runs in: the header's, or the last recorded move.
	Cwd string
	// Updated is the time of the last event (Unix milliseconds), the creation time when
	// there is none.
	Updated int64
	// Messages counts the user and assistant messages.
	Messages int
	// Tokens is the token usage the session's model calls reported.
	Tokens Tokens
}

// Summarize describes a session from its header and events.
func Summarize(h Header, events []Event) Summary {
	sum := Summary{Cwd: h.Cwd, Updated: h.CreatedAt}
	for _, e := range events {
		sum.Add(e)
	}
	return sum
}

// Add folds the next event of a session into its summary, as Summarize does for each
// event in order; stores that keep a running summary (session/pgstore) use it.
func (sum *Summary) Add(e Event) {
	if e.Time > sum.Updated {
		sum.Updated = e.Time
	}
	switch e.Type {
	case TypeTurnStart:
		sum.Turns++
		sum.LastEnd = EndReason{}
	case TypeTurnEnd:
		if p, err := DecodeTurnEnd(e); err == nil {
			sum.LastEnd = p.Reason
		}
	case TypeUserMessage:
		sum.Messages++
		p, err := DecodeUserMessage(e)
		if err != nil || sum.FirstPrompt != "" {
			return
		}
		if src := p.Message.Source; src == nil || src.Kind == "" || src.Kind == "user" {
			sum.FirstPrompt = strings.TrimSpace(messageText(p.Message))
		}
	case TypeAssistantMessage:
		sum.Messages++
		if p, err := DecodeAssistantMessage(e); err == nil && p.Usage != nil {
			if u, err := stepUsage(p.Usage); err == nil {
				sum.Tokens = sum.Tokens.Add(u.Tokens)
			}
		}
	case TypeWorkspaceMoved:
		if o, ok := e.Data.(*jsonv.Object); ok {
			if to, ok := o.Get("to"); ok {
				if s, ok := to.(string); ok && s != "" {
					sum.Cwd = s
				}
			}
		}
	}
}

// messageText joins the text blocks of a message.
func messageText(m content.Message) string {
	var parts []string
	for _, b := range m.Content {
		if b.Type == content.TypeText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
