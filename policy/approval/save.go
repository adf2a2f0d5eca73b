package approval

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// AddAllowRule adds rule to the permissions.allow list of the YAML configuration file at
// path — what an "always, save it" answer does — creating the file, the permissions mapping
// or the list as needed. The rest of the file is kept: other keys, their order and the
// comments (as the YAML library re-emits them). A rule already in the list is not added
// twice. The file is replaced atomically and keeps its permissions (0600 when new).
func AddAllowRule(path, rule string) error {
	if rule == "" {
		return errors.New("approval: no rule to save")
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("approval: reading %s: %w", path, err)
	}
	var doc yaml.Node
	if len(bytes.TrimSpace(data)) > 0 {
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("approval: %s is not valid YAML, so the rule %q was not saved: %w", path, rule, err)
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("approval: %s does not hold a YAML mapping, so the rule %q was not saved", path, rule)
	}
	perms, err := child(doc.Content[0], "permissions", yaml.MappingNode)
	if err != nil {
		return fmt.Errorf("approval: %s: %w", path, err)
	}
	allow, err := child(perms, "allow", yaml.SequenceNode)
	if err != nil {
		return fmt.Errorf("approval: %s: permissions.%w", path, err)
	}
	for _, n := range allow.Content {
		if n.Kind == yaml.ScalarNode && n.Value == rule {
			return nil
		}
	}
	allow.Content = append(allow.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: rule, Style: yaml.DoubleQuotedStyle})
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("approval: encoding %s: %w", path, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("approval: encoding %s: %w", path, err)
	}
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("approval: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("approval: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("approval: writing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("approval: replacing %s: %w", path, err)
	}
	return nil
}

// child returns the value of key in mapping m, adding an empty one of kind when absent.
// A present null value is replaced; a value of another kind is an error.
func child(m *yaml.Node, key string, kind yaml.Kind) (*yaml.Node, error) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != key {
			continue
		}
		v := m.Content[i+1]
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			*v = yaml.Node{Kind: kind}
		}
		if v.Kind != kind {
			return nil, fmt.Errorf("%s (line %d) is not a %s", key, m.Content[i].Line, kindName(kind))
		}
		return v, nil
	}
	v := &yaml.Node{Kind: kind}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v, nil
}

func kindName(k yaml.Kind) string {
	if k == yaml.SequenceNode {
		return "list"
	}
	return "mapping"
}
