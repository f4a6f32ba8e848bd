package sim

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestShareFleetValidateOutageHugeWindow: ShareFleetConfig.Outage's
// comment says "from twice Share.Window to 1e6 s", and Validate checks
// cfg.Outage < 2*win; with a Share.Window above MaxInt64/2 (which
// retryshare.New accepts), 2*win overflows to a negative Duration and a
// 60 s Outage passes; the row's first window then ends at Warmup + Window,
// which overflows too.
func TestShareFleetValidateOutageHugeWindow(t *testing.T) {
	for _, w := range []time.Duration{math.MaxInt64, 1 << 62, math.MaxInt64/2 + 1} {
		cfg := DefaultShareFleet()
		cfg.Rows = cfg.Rows[:1]
		cfg.Share.Window = w
		err := cfg.Validate([]Contender{FullJitter()})
		if err == nil || !strings.Contains(err.Error(), "Outage") && !strings.Contains(err.Error(), "Window") {
			t.Errorf("Share.Window %v, Outage %v: Validate returned %v; want an error naming Outage or Share.Window", w, cfg.Outage, err)
		}
	}
}
