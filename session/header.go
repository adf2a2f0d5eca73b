package session

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/dsh-go/dsh/jsonv"
)

// FormatVersion is the on-disk format version written in every header. While dsh is
// unreleased it is 0 and no migration is provided: a log with another version is refused.
const FormatVersion = 0

// Header is a session's immutable storage metadata, stored as the first line of its log:
//
//	{"type":"session","version":0,"id":…,"createdAt":…,"cwd"?,"parentSession"?,
//	 "seedLength"?,"origin"?,"delegationDepth":…,"agentPreset"?}
//
// Optional members are absent when their field is the zero value.
type Header struct {
	// Version is the format version; Create always writes FormatVersion.
	Version int
	// ID is the session id (NewID when created without one).
	ID string
	// CreatedAt is the creation time in Unix epoch milliseconds.
	CreatedAt int64
	// Cwd is the absolute working directory the session was created in ("" = none).
	Cwd string
	// ParentSession is the session this one was forked from.
	ParentSession string
	// SeedLength is how many leading events were inherited from the parent.
	SeedLength int64
	// Origin is "subagent" for a subagent's child session, or empty.
	Origin string
	// DelegationDepth is 0 for a top-level session and parent depth + 1 for a child.
	DelegationDepth int
	// AgentPreset is the id of the agent preset the session was composed from.
	AgentPreset string
	// Client names what opened a session that records tool calls made from outside an agent
	// loop ("dsh call", or an MCP client's name and version under "dsh mcp serve"); empty
	// for an agent's session. Such a session has no conversation to continue.
	Client string
}

// validate checks the fields the header line and the directory layout depend on.
func (h *Header) validate() error {
	switch {
	case h.Version != FormatVersion:
		return fmt.Errorf("unsupported session format version %d (this dsh reads version %d)", h.Version, FormatVersion)
	case h.ID == "" || !utf8.ValidString(h.ID):
		return errors.New("session id must be a non-empty UTF-8 string")
	case h.CreatedAt < 0 || h.CreatedAt > maxSafeInteger:
		return fmt.Errorf("createdAt %d is out of range", h.CreatedAt)
	case !utf8.ValidString(h.Cwd) || !utf8.ValidString(h.ParentSession) || !utf8.ValidString(h.AgentPreset) || !utf8.ValidString(h.Client):
		return errors.New("header strings must be valid UTF-8")
	case h.SeedLength < 0 || h.SeedLength > maxSafeInteger:
		return fmt.Errorf("seedLength %d is out of range", h.SeedLength)
	case h.Origin != "" && h.Origin != "subagent":
		return fmt.Errorf(`origin %q is not "subagent"`, h.Origin)
	case h.DelegationDepth < 0:
		return fmt.Errorf("delegationDepth %d is negative", h.DelegationDepth)
	}
	return nil
}

// value returns the header line object.
func (h *Header) value() *jsonv.Object {
	o := jsonv.NewObject(
		jsonv.Member{Name: "type", Value: "session"},
		jsonv.Member{Name: "version", Value: float64(h.Version)},
		jsonv.Member{Name: "id", Value: h.ID},
		jsonv.Member{Name: "createdAt", Value: float64(h.CreatedAt)},
	)
	if h.Cwd != "" {
		o.Set("cwd", h.Cwd)
	}
	if h.ParentSession != "" {
		o.Set("parentSession", h.ParentSession)
	}
	if h.SeedLength != 0 {
		o.Set("seedLength", float64(h.SeedLength))
	}
	if h.Origin != "" {
		o.Set("origin", h.Origin)
	}
	o.Set("delegationDepth", float64(h.DelegationDepth))
	if h.AgentPreset != "" {
		o.Set("agentPreset", h.AgentPreset)
	}
	if h.Client != "" {
		o.Set("client", h.Client)
	}
	return o
}

// line returns the header line including its newline.
func (h *Header) line() ([]byte, error) {
	b, err := jsonv.Marshal(h.value())
	if err != nil {
		return nil, fmt.Errorf("session header: %w", err)
	}
	return append(b, '\n'), nil
}

// parseHeaderLine decodes a header line (without its newline). A foreign format version
// is reported before the shape is checked: a future format need not match today's shape.
func parseHeaderLine(line []byte) (Header, error) {
	v, err := jsonv.Parse(line)
	if err != nil {
		return Header{}, fmt.Errorf("header line is not valid JSON: %w", err)
	}
	o, ok := v.(*jsonv.Object)
	if !ok {
		return Header{}, errors.New("first line is not a session header")
	}
	if ver, ok := o.Get("version"); ok {
		if n, ok := safeInt(ver); ok && n != FormatVersion {
			id, _ := o.Get("id")
			ids, _ := id.(string)
			return Header{}, fmt.Errorf("session %q uses format version %d; this dsh reads version %d (upgrade dsh)", ids, n, FormatVersion)
		}
	}
	if t, _ := o.Get("type"); t != "session" {
		return Header{}, errors.New(`first line is not a session header (type is not "session")`)
	}
	var h Header
	for _, m := range o.Members() {
		var err error
		switch m.Name {
		case "type":
		case "version":
			h.Version, err = headerInt(m)
		case "id":
			h.ID, err = headerString(m)
		case "createdAt":
			var n int
			n, err = headerInt(m)
			h.CreatedAt = int64(n)
		case "cwd":
			h.Cwd, err = headerString(m)
		case "parentSession":
			h.ParentSession, err = headerString(m)
		case "seedLength":
			var n int
			n, err = headerInt(m)
			h.SeedLength = int64(n)
		case "origin":
			h.Origin, err = headerString(m)
		case "delegationDepth":
			h.DelegationDepth, err = headerInt(m)
		case "agentPreset":
			h.AgentPreset, err = headerString(m)
		case "client":
			h.Client, err = headerString(m)
		case "sandboxMode", "approvalPolicy":
			err = errors.New("session header uses retired policy baseline fields")
		default:
			// Unknown header members are tolerated: they carry no reconstruction meaning.
		}
		if err != nil {
			return Header{}, err
		}
	}
	for _, req := range []string{"version", "id", "createdAt", "delegationDepth"} {
		if !o.Has(req) {
			return Header{}, fmt.Errorf("session header lacks %q", req)
		}
	}
	if err := h.validate(); err != nil {
		return Header{}, fmt.Errorf("invalid session header: %w", err)
	}
	return h, nil
}

func headerInt(m jsonv.Member) (int, error) {
	n, ok := safeInt(m.Value)
	if !ok || n < 0 {
		return 0, fmt.Errorf("session header %q must be a non-negative integer", m.Name)
	}
	return int(n), nil
}

func headerString(m jsonv.Member) (string, error) {
	s, ok := m.Value.(string)
	if !ok {
		return "", fmt.Errorf("session header %q must be a string", m.Name)
	}
	return s, nil
}
