package countsim

import (
	"fmt"
	"math"
	"strings"
)

// target is one of issue 37's targets for one judge at one look interval of one model.
type target func(cells []Cell, model string, j, l int) string

func writeTargets(b *strings.Builder, cfg Config, cells []Cell) {
	main := cfg.Traffics[0].Name
	fmt.Fprintf(b, "## Targets (issue 37)\n\nPer noise model, judge and look interval. False FAIL and false PASS over every traffic row (the worst row shown); the times at %s. \"Within 10 min\" and medians are met on the point estimate; the interval is shown.\n\n", main)
	heads := []string{"false FAIL at parity <= 1%, 95% upper < 2%", "1.5x margin PASSed in 0 of >= 200", "parity: PASS median <= 5, 90th <= 10 min", "p99 +20% FAIL within 10 min >= 95%", "p99 +40% FAIL median <= 3 min", "errors +0.5 FAIL within 10 min >= 95%",
		"late p99 +40% FAIL within 10 min of minute 20 >= 95%, none passing at the end", "late errors +0.5 likewise", "slowest 3% x1.4 FAIL within 10 min >= 95%, 0 PASS", "slowest 1% x2 likewise"}
	ts := []target{cfg.falseFail, cfg.falsePass, cfg.passTime, cfg.within10("p99+20"), cfg.failMedian, cfg.within10("errors+0.5"),
		cfg.lateOrTail("late-p99+40"), cfg.lateOrTail("late-errors+0.5"), cfg.lateOrTail("tail3x1.4"), cfg.lateOrTail("tail1x2")}
	for _, m := range cfg.Models {
		fmt.Fprintf(b, "### %s\n\n| judge | looks | %s |\n|---|---|%s\n", m.Name, strings.Join(heads, " | "), strings.Repeat("---|", len(heads)))
		for j := range 2 {
			for l := range 2 {
				var row []string
				for _, t := range ts {
					row = append(row, t(cells, m.Name, j, l))
				}
				fmt.Fprintf(b, "| %s | %s | %s |\n", judgeName(j), lookName(l), strings.Join(row, " | "))
			}
		}
		b.WriteString("\n")
	}
}

// overRows returns a rate of scenario key in every traffic row: whether each row is ok, and the
// worst row's rate and name.
func (cfg Config) overRows(cells []Cell, model, key string, j, l int, ok func(Rate) bool) string {
	all, worst, name, seen := true, Rate{}, "", false
	for _, tr := range cfg.Traffics {
		c, found := find(cells, model, tr.Name, key)
		if !found {
			continue
		}
		r := c.summaries()[j][l].Fail
		if key == "margin15" {
			r = c.summaries()[j][l].Pass
		}
		all = all && ok(r)
		if !seen || r.P() > worst.P() {
			worst, name, seen = r, tr.Name, true
		}
	}
	if !seen {
		return "not run"
	}
	return fmt.Sprintf("%s: %s at %s", met(all), rateText(worst), name)
}

func (cfg Config) falseFail(cells []Cell, model string, j, l int) string {
	return cfg.overRows(cells, model, "aa", j, l, func(r Rate) bool { return r.P() <= 0.01 && r.Hi < 0.02 })
}

func (cfg Config) falsePass(cells []Cell, model string, j, l int) string {
	return cfg.overRows(cells, model, "margin15", j, l, func(r Rate) bool { return r.K == 0 && r.N >= 200 })
}

// mainCell returns the cell of scenario key at the first traffic row, with its oracle.
func (cfg Config) mainCell(cells []Cell, model, key string, j, l int) (Summary, Oracle, bool) {
	c, ok := find(cells, model, cfg.Traffics[0].Name, key)
	if !ok {
		return Summary{}, Oracle{}, false
	}
	return c.summaries()[j][l], cfg.oracle(cells, c), true
}

// oracle returns cell c's oracle, its FAIL test's null the boundary cell of c's model and traffic.
func (cfg Config) oracle(cells []Cell, c Cell) Oracle {
	if c.Scenario.From > 0 || c.Scenario.TailShare > 0 {
		// Its contrasts are at the judged bound from the gray's start: no oracle of a late or
		// tail-only regression.
		nan := math.NaN()
		return Oracle{Fail50: nan, Fail95: nan, Pass50: nan, Pass90: nan}
	}
	null, _ := find(cells, c.Model.Name, c.Traffic.Name, "boundary")
	return OracleOf(c.Runs, null.Runs, cfg.Test.Alpha, cfg.Test.K, cfg.Step)
}

func (cfg Config) passTime(cells []Cell, model string, j, l int) string {
	s, o, ok := cfg.mainCell(cells, model, "aa", j, l)
	if !ok {
		return "not run"
	}
	return fmt.Sprintf("%s: %s / %s min (PASS at some look %s)%s%s", met(s.PassMedian <= 5 && s.PassP90 <= 10), minText(s.PassMedian), minText(s.PassP90),
		rateText(s.Pass), beyond(o.Pass50, 5), beyond(o.Pass90, 10))
}

func (cfg Config) within10(key string) target {
	return func(cells []Cell, model string, j, l int) string {
		s, o, ok := cfg.mainCell(cells, model, key, j, l)
		if !ok {
			return "not run"
		}
		return fmt.Sprintf("%s: %s%s", met(s.Fail10.P() >= 0.95), rateText(s.Fail10), beyond(o.Fail95, 10))
	}
}

// lateOrTail is the target of a late or tail-only regression (issue 59): FAIL within 10 minutes
// of its start in at least 95% of the runs, and no run left PASSing at the end (a late one) or
// PASSed at any look (a tail-only one).
func (cfg Config) lateOrTail(key string) target {
	return func(cells []Cell, model string, j, l int) string {
		c, ok := find(cells, model, cfg.Traffics[0].Name, key)
		if !ok {
			return "not run"
		}
		s := c.summaries()[j][l]
		bad, what := s.Runs-s.Fail.K, "not FAILed by the end"
		if c.Scenario.From == 0 {
			bad, what = s.Pass.K, "PASSed"
		}
		return fmt.Sprintf("%s: %s; %s in %d", met(s.Fail10.P() >= 0.95 && bad == 0), rateText(s.Fail10), what, bad)
	}
}

func (cfg Config) failMedian(cells []Cell, model string, j, l int) string {
	s, o, ok := cfg.mainCell(cells, model, "p99+40", j, l)
	if !ok {
		return "not run"
	}
	return fmt.Sprintf("%s: %s min%s", met(s.FailMedian <= 3), minText(s.FailMedian), beyond(o.Fail50, 3))
}
