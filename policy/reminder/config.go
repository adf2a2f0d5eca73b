package reminder

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/jsonv"
)

// Defaults of the reference harness.
var defaultThresholds = []int{3, 5, 8}

// DefaultArgumentsPreviewChars is how many characters of the canonical arguments the detailed
// reminder quotes when ArgumentsPreviewChars is zero.
const DefaultArgumentsPreviewChars = 500

// Config configures the repeat-tool reminder. The zero Config is the reference default:
// thresholds [3, 5, 8], every tool tracked, 500 preview characters.
type Config struct {
	// Thresholds are the consecutive-repeat counts that draw a reminder: the smallest draws
	// the gentle text, the others the detailed one. Nil means [3, 5, 8]; a non-nil empty
	// list is an error. Every threshold must be an integer >= 2, without duplicates; the
	// order does not matter.
	Thresholds []int `yaml:"thresholds"`
	// Include lists the tool-name patterns to track ("*" matches any sequence, everything
	// else is literal); empty tracks every tool.
	Include []string `yaml:"include"`
	// Exclude lists tool-name patterns whose calls are transparent: they neither count nor
	// break a chain.
	Exclude []string `yaml:"exclude"`
	// ArgumentsPreviewChars caps how many characters (UTF-16 code units, as the reference
	// counts) of the canonical arguments the detailed reminder quotes; zero means 500.
	// Detection always compares the full arguments.
	ArgumentsPreviewChars int `yaml:"argumentsPreviewChars"`
}

// DefaultConfig returns the reference defaults spelled out.
func DefaultConfig() Config {
	return Config{Thresholds: slices.Clone(defaultThresholds), Include: []string{}, Exclude: []string{}, ArgumentsPreviewChars: DefaultArgumentsPreviewChars}
}

// Validate reports the first configuration error, with the reference's load-time messages.
func (c Config) Validate() error {
	var ts []float64
	if c.Thresholds != nil {
		ts = make([]float64, len(c.Thresholds))
		for i, t := range c.Thresholds {
			ts[i] = float64(t)
		}
	}
	var preview *float64
	if c.ArgumentsPreviewChars != 0 {
		p := float64(c.ArgumentsPreviewChars)
		preview = &p
	}
	return validate(ts, c.Thresholds != nil, preview)
}

// validate checks raw configuration numbers in the reference's order: the thresholds (empty,
// then each value, then duplicates), then the preview cap. given reports whether thresholds
// were configured at all.
func validate(thresholds []float64, given bool, preview *float64) error {
	if given {
		if len(thresholds) == 0 {
			return errors.New("repeat-tool-reminder: `thresholds` must not be empty")
		}
		for _, t := range thresholds {
			if !isInteger(t) || t < 2 {
				return fmt.Errorf("repeat-tool-reminder: invalid threshold %s — every threshold must be an integer >= 2", jsNumber(t))
			}
		}
		seen := make(map[float64]bool, len(thresholds))
		for _, t := range thresholds {
			if seen[t] {
				return errors.New("repeat-tool-reminder: `thresholds` must not contain duplicates")
			}
			seen[t] = true
		}
	}
	if preview != nil && (!isInteger(*preview) || *preview < 1) {
		return fmt.Errorf("repeat-tool-reminder: invalid argumentsPreviewChars %s — must be an integer >= 1", jsNumber(*preview))
	}
	return nil
}

// isInteger is JavaScript's Number.isInteger, restricted to exactly representable integers
// (a larger count could never be reached and would not convert to int faithfully).
func isInteger(f float64) bool {
	return !math.IsNaN(f) && !math.IsInf(f, 0) && f == math.Trunc(f) && math.Abs(f) <= 1<<53
}

// jsNumber formats f as JavaScript's String(f) does.
func jsNumber(f float64) string {
	if math.IsNaN(f) {
		return "NaN"
	}
	if math.IsInf(f, 0) {
		if f > 0 {
			return "Infinity"
		}
		return "-Infinity"
	}
	if f == 0 {
		return "0"
	}
	b, err := jsonv.Marshal(f)
	if err != nil {
		return fmt.Sprint(f)
	}
	return string(b)
}

// UnmarshalYAML decodes the configuration from YAML and validates it there, so that values
// a Go int cannot hold faithfully (2.5, an explicit 0 preview cap) fail with the reference's
// messages instead of being truncated. Unknown keys are an error.
func (c *Config) UnmarshalYAML(node *yaml.Node) error {
	var raw struct {
		Thresholds            []float64 `yaml:"thresholds"`
		Include               []string  `yaml:"include"`
		Exclude               []string  `yaml:"exclude"`
		ArgumentsPreviewChars *float64  `yaml:"argumentsPreviewChars"`
	}
	if err := checkKeys(node, "thresholds", "include", "exclude", "argumentsPreviewChars"); err != nil {
		return err
	}
	if err := node.Decode(&raw); err != nil {
		return fmt.Errorf("repeat-tool-reminder: %w", err)
	}
	given := raw.Thresholds != nil || hasKeyWithValue(node, "thresholds")
	if given && raw.Thresholds == nil {
		raw.Thresholds = []float64{}
	}
	if err := validate(raw.Thresholds, given, raw.ArgumentsPreviewChars); err != nil {
		return err
	}
	out := Config{Include: raw.Include, Exclude: raw.Exclude}
	if given {
		out.Thresholds = make([]int, len(raw.Thresholds))
		for i, t := range raw.Thresholds {
			out.Thresholds[i] = int(t)
		}
	}
	if raw.ArgumentsPreviewChars != nil {
		out.ArgumentsPreviewChars = int(*raw.ArgumentsPreviewChars)
	}
	*c = out
	return nil
}

// checkKeys rejects mapping keys other than known ones.
func checkKeys(node *yaml.Node, known ...string) error {
	if node.Kind != yaml.MappingNode {
		return nil // node.Decode reports the type error
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k := node.Content[i].Value
		if !slices.Contains(known, k) {
			return fmt.Errorf("repeat-tool-reminder: unknown config key %q (line %d)", k, node.Content[i].Line)
		}
	}
	return nil
}

// hasKeyWithValue reports whether the mapping sets key to something other than null.
func hasKeyWithValue(node *yaml.Node, key string) bool {
	if node.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			v := node.Content[i+1]
			return !(v.Kind == yaml.ScalarNode && v.Tag == "!!null")
		}
	}
	return false
}
