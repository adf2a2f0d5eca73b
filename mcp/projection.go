package mcp

import (
	"strings"

	"github.com/dsh-go/dsh/jsonv"
)

// ProjectText returns the model-visible text of an MCP content array (docs/behaviour.md §13): text blocks
// as they are, every other block as a fixed one-line description, all joined by "\n";
// "(<raw> returned no model-visible content)" when nothing is left. The blocks come from an
// untrusted server, so every member is checked rather than assumed. Images are described
// here; ProjectContent admits them when the host has an image store.
func ProjectText(blocks []any, raw string) string {
	parts := make([]string, 0, len(blocks))
	for _, v := range blocks {
		b, ok := v.(*jsonv.Object)
		if !ok {
			parts = append(parts, "[unsupported MCP content block: expected an object]")
			continue
		}
		typ, _ := b.Get("type")
		t, isString := typ.(string)
		if !isString {
			// A switch on a non-string type matches no case; the template prints it.
			parts = append(parts, "[unsupported MCP content type: "+jsTemplate(typ, b.Has("type"))+"]")
			continue
		}
		switch t {
		case "text":
			if text, ok := b.Get("text"); ok {
				parts = append(parts, jsJoinElement(text))
			}
		case "image":
			parts = append(parts, "[image unavailable: "+mediaType(b)+"; this result was not admitted to durable model context; raw image data remains available to programmatic callers]")
		case "resource_link":
			name, hasName := b.Get("name")
			uri, hasURI := b.Get("uri")
			if !hasName || !hasURI {
				parts = append(parts, "[resource link unavailable: the MCP block is missing its name or URI]")
			} else {
				parts = append(parts, "Resource link: "+jsTemplate(name, true)+" ("+jsTemplate(uri, true)+")")
			}
		case "audio":
			parts = append(parts, "[audio result unsupported: "+mediaType(b)+"; raw audio data remains available to programmatic callers]")
		case "resource":
			parts = append(parts, "[embedded resource unsupported; raw resource data remains available to programmatic callers]")
		default:
			parts = append(parts, "[unsupported MCP content type: "+t+"]")
		}
	}
	if len(parts) == 0 {
		return "(" + raw + " returned no model-visible content)"
	}
	return strings.Join(parts, "\n")
}

// mediaType is the reference's `block.mimeType ?? 'unknown media type'`.
func mediaType(b *jsonv.Object) string {
	v, ok := b.Get("mimeType")
	if !ok || v == nil {
		return "unknown media type"
	}
	return jsTemplate(v, true)
}

// jsTemplate renders a JSON value as a JavaScript template literal would interpolate it;
// present is false for an absent member (undefined).
func jsTemplate(v any, present bool) string {
	if !present {
		return "undefined"
	}
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case bool, float64:
		b, err := jsonv.Marshal(x) // JSON.stringify and String agree on finite numbers
		if err != nil {
			return ""
		}
		return string(b)
	case []any:
		// Array.prototype.toString joins the elements' join-forms with ",".
		s := make([]string, len(x))
		for i, e := range x {
			s[i] = jsJoinElement(e)
		}
		return strings.Join(s, ",")
	default:
		return "[object Object]"
	}
}

// jsJoinElement renders a value as Array.prototype.join does: null becomes "".
func jsJoinElement(v any) string {
	if v == nil {
		return ""
	}
	return jsTemplate(v, true)
}
