// Package mcptest holds the test servers of package mcp: badserver, a deliberately
// misbehaving stdio MCP server, and tsclient.mjs, a driver for the official TypeScript SDK
// client. The npm packages the tests use (the reference MCP servers and the TypeScript SDK)
// are installed by scripts/npm-deps.sh into .ci/node_modules; NodeModules finds them.
package mcptest

import (
	"fmt"
	"os"
	"path/filepath"
)

// NodeModules returns the .ci/node_modules directory of the module containing dir (a
// test's working directory), or an error that says how to install it.
func NodeModules(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			nm := filepath.Join(d, ".ci", "node_modules")
			for _, p := range []string{"@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/sdk"} {
				if _, err := os.Stat(filepath.Join(nm, p, "package.json")); err != nil {
					return "", fmt.Errorf("npm package %s is not installed in %s: run scripts/npm-deps.sh", p, nm)
				}
			}
			return nm, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}
