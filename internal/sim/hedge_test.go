package sim

import (
	"errors"
	"testing"
)

// TestHedgeBudgetHolds: with the budget, the extra copies stay within the
// budget's share on every server, the brownout included, and the same
// seed gives the same rows.
func TestHedgeBudgetHolds(t *testing.T) {
	cfg := DefaultHedge()
	cfg.Requests = 5000
	res, err := Hedge(cfg, nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Hedge(cfg, nil, 7)
	for i, r := range res {
		for j, row := range r.Rows {
			if row != again[i].Rows[j] {
				t.Errorf("%s, %s: not deterministic: %+v then %+v", r.Server.Name, row.Name, row, again[i].Rows[j])
			}
			if row.Budget && row.Extra > row.Bound {
				t.Errorf("%s, %s: extra %.4f above the budget's share %.4f", r.Server.Name, row.Name, row.Extra, row.Bound)
			}
			if row.MaxExtraLoad == 0 && row.Fixed == 0 && row.Extra != 0 {
				t.Errorf("%s, no hedging: extra %v", r.Server.Name, row.Extra)
			}
		}
	}
}

func TestHedgeValidate(t *testing.T) {
	for name, mod := range map[string]func(*HedgeConfig){
		"Requests":          func(c *HedgeConfig) { c.Requests = 0 },
		"Concurrency":       func(c *HedgeConfig) { c.Concurrency = MaxHedgeConcurrency + 1 },
		"Rows.Budget":       func(c *HedgeConfig) { c.Rows[0].Budget = true },
		"Rows.MaxExtraLoad": func(c *HedgeConfig) { c.Rows[2].MaxExtraLoad = 0.6 },
		"Servers.Sigma":     func(c *HedgeConfig) { c.Servers[0].Sigma = -1 },
		"Servers.SlowTimes": func(c *HedgeConfig) { c.Servers[1].SlowTimes = 0 },
		"Servers":           func(c *HedgeConfig) { c.Servers = nil },
	} {
		cfg := DefaultHedge()
		mod(&cfg)
		var ce *ConfigError
		if err := cfg.Validate(nil); !errors.As(err, &ce) || ce.Param != name {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
	cfg := DefaultHedge()
	cfg.Requests = 1 << 30
	var ce *ConfigError
	if err := cfg.Validate(nil); !errors.As(err, &ce) || ce.Param != "Requests" || len(ce.Also) == 0 {
		t.Errorf("a run above MaxWork: Validate = %v", err)
	}
	if err := DefaultHedge().Validate(nil); err != nil {
		t.Error(err)
	}
}
