package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// readResults reads the results.csv files of earlier runs. Each is a path, optionally followed
// by renames of its schedulers, path:old=new[:old=new...] (a variant that has since become a
// default, or a default that has since become a variant). A later file's row replaces an
// earlier one of the same workload, scheduler and seed; rows come out by workload (as in
// workloadOrder), then in the order their scheduler was first read, then by seed. Series are
// not kept in the CSV, so merged results have none.
func readResults(specs []string) ([]Result, error) {
	type key struct {
		w, s string
		seed uint64
	}
	byKey := map[key]Result{}
	schedOrder := map[string]int{}
	for _, spec := range specs {
		file, renames, err := parseMergeSpec(spec)
		if err != nil {
			return nil, err
		}
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		records, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(records) == 0 {
			return nil, fmt.Errorf("%s: empty", file)
		}
		col := map[string]int{}
		for i, h := range records[0] {
			col[h] = i
		}
		for _, want := range []string{"workload", "scheduler", "seed"} {
			if _, ok := col[want]; !ok {
				return nil, fmt.Errorf("%s: no %q column: not an eval results.csv", file, want)
			}
		}
		for line, rec := range records[1:] {
			seed, err := strconv.ParseUint(rec[col["seed"]], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: seed %q: %w", file, line+2, rec[col["seed"]], err)
			}
			sched := rec[col["scheduler"]]
			if to, ok := renames[sched]; ok {
				sched = to
			}
			r := Result{Workload: rec[col["workload"]], Scheduler: sched, Seed: seed,
				Figures: Figures{Overload: make([]float64, len(Thresholds))}}
			for _, c := range columns {
				i, ok := col[c.name]
				if !ok || rec[i] == unknownCell {
					// An older file without this column, or a merged one that lacked it.
					if r.Unknown == nil {
						r.Unknown = map[string]bool{}
					}
					r.Unknown[c.name] = true
					continue
				}
				v, err := strconv.ParseFloat(rec[i], 64)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: %s %q: %w", file, line+2, c.name, rec[i], err)
				}
				c.set(&r.Figures, v)
			}
			if _, ok := schedOrder[r.Scheduler]; !ok {
				schedOrder[r.Scheduler] = len(schedOrder)
			}
			byKey[key{r.Workload, r.Scheduler, r.Seed}] = r
		}
	}
	out := make([]Result, 0, len(byKey))
	for _, r := range byKey {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if wa, wb := workloadRank(a.Workload), workloadRank(b.Workload); wa != wb {
			return wa < wb
		}
		if a.Workload != b.Workload {
			return a.Workload < b.Workload
		}
		if sa, sb := schedOrder[a.Scheduler], schedOrder[b.Scheduler]; sa != sb {
			return sa < sb
		}
		return a.Seed < b.Seed
	})
	return out, nil
}

// parseMergeSpec splits path:old=new[:old=new...].
func parseMergeSpec(spec string) (file string, renames map[string]string, err error) {
	parts := strings.Split(spec, ":")
	renames = map[string]string{}
	for _, p := range parts[1:] {
		from, to, ok := strings.Cut(p, "=")
		if !ok || from == "" || to == "" {
			return "", nil, fmt.Errorf("%q: %q is not old=new (a file is path[:old=new...])", spec, p)
		}
		renames[from] = to
	}
	return parts[0], renames, nil
}

var workloadOrder = []string{"steady", "burst", "reward", "gang"}

func workloadRank(w string) int {
	for i, x := range workloadOrder {
		if x == w {
			return i
		}
	}
	return len(workloadOrder)
}

// merge writes the report of the results in files into dir.
func merge(files []string, dir string) error {
	results, err := readResults(files)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var names []string
	for _, spec := range files {
		f, renames, _ := parseMergeSpec(spec)
		name := filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f)
		var rn []string
		for from, to := range renames {
			rn = append(rn, from+" as "+to)
		}
		sort.Strings(rn)
		if len(rn) > 0 {
			name += " (" + strings.Join(rn, ", ") + ")"
		}
		names = append(names, name)
	}
	header := fmt.Sprintf("Command: `go run ./lab -merge %s`\n\nMerged from %s (a later file's row replaces an "+
		"earlier one of the same workload, scheduler and seed); the runs' settings are in each file's results.md.\n\n",
		strings.Join(files, ","), strings.Join(names, ", "))
	return writeReport(dir, header, results)
}

// referenceCheck is the lab's check on itself: in every workload and seed (within its band) that
// ran the defaults and both references, workload-level's cpu overload volume lies between the
// oracle's and the defaults' (a reference that knows less cannot do better than the clairvoyant
// one, and one that knows the true levels should not do worse than requests).
func referenceCheck(results []Result) string {
	type ws struct {
		w    string
		seed uint64
	}
	vol := map[ws]map[string]float64{}
	var order []ws
	for _, r := range results {
		if outOfBand(r) || r.Unknown["overload >90% cpu core-min"] {
			continue
		}
		k := ws{r.Workload, r.Seed}
		if vol[k] == nil {
			vol[k] = map[string]float64{}
			order = append(order, k)
		}
		vol[k][r.Scheduler] = r.Figures.OverCPUVolume
	}
	var b strings.Builder
	for _, k := range order {
		d, okD := vol[k]["defaults"]
		o, okO := vol[k]["oracle"]
		wl, okW := vol[k]["workload-level"]
		if !okD || !okO || !okW {
			continue
		}
		verdict := "yes"
		if wl < o || wl > d {
			verdict = "NO: the lab's references are out of order"
		}
		fmt.Fprintf(&b, "- %s seed %d: oracle %.1f <= workload-level %.1f <= defaults %.1f core-min: %s\n", k.w, k.seed, o, wl, d, verdict)
	}
	if b.Len() == 0 {
		return ""
	}
	return "\nReference check (cpu overload volume; workload-level must lie between the oracle and the defaults):\n\n" + b.String()
}

// multiSeed tells whether some workload and scheduler have results of several seeds.
func multiSeed(results []Result) bool {
	seen := map[[2]string]bool{}
	for _, r := range results {
		k := [2]string{r.Workload, r.Scheduler}
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// ratioTable is the ratios of each scheduler's figures to a baseline's of the same workload and
// seed, median over the seeds both have: overload volume (cpu, memory), its share of the
// oracle's reduction ((defaults - X) / (defaults - oracle)), overload node-minutes, pods placed,
// cpu variation, failed starts and room held to the defaults'; nodes in use to MostAllocated's.
// "-" where the baseline did not run or is zero. Runs out of their load band are left out.
func ratioTable(results []Result) string {
	type key struct {
		w, s string
		seed uint64
	}
	at := map[key]Figures{}
	type ws struct{ w, s string }
	var order []ws
	seen := map[ws]bool{}
	var kept []Result
	for _, r := range results {
		if outOfBand(r) {
			continue // reported in its row, not compared
		}
		kept = append(kept, r)
	}
	results = kept
	for _, r := range results {
		at[key{r.Workload, r.Scheduler, r.Seed}] = r.Figures
		if k := (ws{r.Workload, r.Scheduler}); !seen[k] {
			seen[k] = true
			order = append(order, k)
		}
	}
	ratios := []struct {
		name, base string
		val        func(Figures) float64
		// share: the cell is (defaults - X) / (defaults - oracle), X's share of the oracle's
		// reduction of val, not X / defaults.
		share bool
	}{
		{"cpu core-min >90% / defaults", "defaults", func(f Figures) float64 { return f.OverCPUVolume }, false},
		{"share of oracle's reduction (cpu volume)", "defaults", func(f Figures) float64 { return f.OverCPUVolume }, true},
		{"mem GiB-min >90% / defaults", "defaults", func(f Figures) float64 { return f.OverMemVolume }, false},
		{"overload >90% node-min / defaults", "defaults", func(f Figures) float64 { return f.Overload[1] }, false},
		{"overload >100% / defaults", "defaults", func(f Figures) float64 { return f.Overload[2] }, false},
		{"placed / defaults", "defaults", func(f Figures) float64 { return float64(f.Placed) }, false},
		{"nodes in use / most-allocated", "most-allocated", func(f Figures) float64 { return f.NodesInUse }, false},
		{"cv cpu util / defaults", "defaults", func(f Figures) float64 { return f.CV }, false},
		{"failed starts / defaults", "defaults", func(f Figures) float64 { return float64(f.FailedStarts) }, false},
		{"room held / defaults", "defaults", func(f Figures) float64 { return f.HeldCPUMinutes }, false},
	}
	var b strings.Builder
	b.WriteString("\nRatios to the baseline's figure for the same workload and seed, and each scheduler's share of the oracle's reduction of the cpu overload volume, (defaults - X) / (defaults - oracle) (median over the seeds both ran, within their load band; the seeds in brackets):\n\n| workload | scheduler |")
	for _, r := range ratios {
		b.WriteString(" " + r.name + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---:|", len(ratios)) + "\n")
	rows := 0
	for _, k := range order {
		var cells []string
		some := false
		for _, r := range ratios {
			if k.s == r.base {
				cells = append(cells, "-")
				continue
			}
			var xs []float64
			var seeds []string
			for _, res := range results {
				if res.Workload != k.w || res.Scheduler != k.s {
					continue
				}
				base, ok := at[key{k.w, r.base, res.Seed}]
				if !ok || r.val(base) <= 0 {
					continue
				}
				if r.share {
					oracle, ok := at[key{k.w, "oracle", res.Seed}]
					if !ok || r.val(base)-r.val(oracle) <= 0 {
						continue
					}
					xs = append(xs, (r.val(base)-r.val(res.Figures))/(r.val(base)-r.val(oracle)))
				} else {
					xs = append(xs, r.val(res.Figures)/r.val(base))
				}
				seeds = append(seeds, strconv.FormatUint(res.Seed, 10))
			}
			if len(xs) == 0 {
				cells = append(cells, "-")
				continue
			}
			some = true
			cells = append(cells, fmt.Sprintf("%.2f (%s)", median(xs), strings.Join(seeds, ",")))
		}
		if some {
			rows++
			fmt.Fprintf(&b, "| %s | %s | %s |\n", k.w, k.s, strings.Join(cells, " | "))
		}
	}
	if rows == 0 {
		return ""
	}
	return b.String()
}
