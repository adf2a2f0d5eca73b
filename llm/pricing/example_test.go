package pricing_test

import (
	"fmt"
	"time"

	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/pricing"
)

// The same call costs half as much off-peak: at 10:00 Beijing time on a Tuesday it is peak,
// at 20:00 it is not.
func ExampleTable_Cost() {
	tab := pricing.Default()
	u := llm.Usage{InputTokens: 200_000, CacheReadTokens: 800_000, OutputTokens: 50_000}
	beijing := time.FixedZone("Beijing", 8*3600)
	for _, hour := range []int{10, 20} {
		at := time.Date(2026, 12, 1, hour, 0, 0, 0, beijing)
		cost, _ := tab.Cost("deepseek-flash", u, at)
		fmt.Printf("%02d:00 peak=%v ¥%.4f\n", hour, tab.IsPeak(at), cost)
	}
	// Output:
	// 10:00 peak=true ¥0.8320
	// 20:00 peak=false ¥0.4160
}
