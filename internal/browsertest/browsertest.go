// Package browsertest starts headless Chromium (Debian's chromium package, which
// scripts/test-deps.sh installs) for tests that drive a real browser with chromedp.
package browsertest

import (
	"context"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/dsh-go/dsh/internal/testwait"
)

// ChromiumPath is where Debian's chromium package puts the browser.
const ChromiumPath = "/usr/bin/chromium"

// Start starts headless Chromium for one test and returns its chromedp context; every
// action is bounded by the test's context and the browser is closed when the test ends.
// When listen is not nil it receives every event of the browser's first tab from its
// start. A missing browser fails the test with what installs it.
func Start(t *testing.T, listen func(ev any)) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		t.Fatalf("the browser tests need Chromium at %s (scripts/test-deps.sh installs it): %v", ChromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoSandbox, // tests run as root in CI; dsh itself never starts a browser
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(testwait.Context(t), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	var err error
	if listen != nil {
		err = chromedp.Listen(ctx, listen)
	} else {
		err = chromedp.Do(ctx)
	}
	if err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}
