// Package mcptest holds the test servers of package mcp: badserver, a deliberately
// misbehaving stdio MCP server, and tsclient.mjs, a driver for the official TypeScript SDK
// client. The npm packages the tests use (the reference MCP servers and the TypeScript SDK)
// are installed by scripts/npm-deps.sh into .ci/node_modules; NodeModules finds them.
package mcptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Installed returns the .ci/node_modules directory the npm MCP servers are installed in,
// for a test whose working directory is inside the module; a missing package or a missing
// node fails the test with how to install them, never a skip.
func Installed(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	nm, err := NodeModules(wd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: run scripts/npm-deps.sh")
	}
	return nm
}

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
