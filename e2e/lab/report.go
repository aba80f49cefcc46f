package main

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// columns of the table: header and value of a result.
var columns = []struct {
	name string
	val  func(f Figures) float64
	prec int
	// set reads the column back (eval -merge).
	set func(f *Figures, v float64)
}{
	{"overload >90% cpu core-min", func(f Figures) float64 { return f.OverCPUVolume }, 1, func(f *Figures, v float64) { f.OverCPUVolume = v }},
	{"overload >90% mem GiB-min", func(f Figures) float64 { return f.OverMemVolume }, 1, func(f *Figures, v float64) { f.OverMemVolume = v }},
	{"overload >80% node-min", func(f Figures) float64 { return f.Overload[0] }, 0, func(f *Figures, v float64) { f.Overload[0] = v }},
	{"overload >90% node-min", func(f Figures) float64 { return f.Overload[1] }, 0, func(f *Figures, v float64) { f.Overload[1] = v }},
	{"overload >100% node-min", func(f Figures) float64 { return f.Overload[2] }, 0, func(f *Figures, v float64) { f.Overload[2] = v }},
	{"worst node p99 util", func(f Figures) float64 { return f.WorstP99 }, 2, func(f *Figures, v float64) { f.WorstP99 = v }},
	{"pods created", func(f Figures) float64 { return float64(f.Created) }, 0, func(f *Figures, v float64) { f.Created = int(v) }},
	{"placed", func(f Figures) float64 { return float64(f.Placed) }, 0, func(f *Figures, v float64) { f.Placed = int(v) }},
	{"pending at end", func(f Figures) float64 { return float64(f.Pending) }, 0, func(f *Figures, v float64) { f.Pending = int(v) }},
	{"bind p50 s", func(f Figures) float64 { return f.BindP50 }, 2, func(f *Figures, v float64) { f.BindP50 = v }},
	{"bind p99 s", func(f Figures) float64 { return f.BindP99 }, 2, func(f *Figures, v float64) { f.BindP99 = v }},
	{"nodes in use", func(f Figures) float64 { return f.NodesInUse }, 1, func(f *Figures, v float64) { f.NodesInUse = v }},
	{"cpu util in use", func(f Figures) float64 { return f.CPUInUse }, 2, func(f *Figures, v float64) { f.CPUInUse = v }},
	{"mem util in use", func(f Figures) float64 { return f.MemInUse }, 2, func(f *Figures, v float64) { f.MemInUse = v }},
	{"cv cpu util", func(f Figures) float64 { return f.CV }, 3, func(f *Figures, v float64) { f.CV = v }},
	{"failed starts", func(f Figures) float64 { return float64(f.FailedStarts) }, 0, func(f *Figures, v float64) { f.FailedStarts = int(v) }},
	{"groups complete/created", func(f Figures) float64 { return f.GroupShare }, 2, func(f *Figures, v float64) { f.GroupShare = v }},
	{"groups partial at end", func(f Figures) float64 { return float64(f.GroupsPartial) }, 0, func(f *Figures, v float64) { f.GroupsPartial = int(v) }},
	{"room held by waiting members cpu-min", func(f Figures) float64 { return f.HeldCPUMinutes }, 0, func(f *Figures, v float64) { f.HeldCPUMinutes = v }},
	{"longest sample gap min", func(f Figures) float64 { return f.MaxGap }, 1, func(f *Figures, v float64) { f.MaxGap = v }},
	{"pod run / given", func(f Figures) float64 { return f.RunStretch }, 2, func(f *Figures, v float64) { f.RunStretch = v }},
	{"hot spell mean min", func(f Figures) float64 { return f.HotSpell }, 1, func(f *Figures, v float64) { f.HotSpell = v }},
	{"evictions/h", func(f Figures) float64 { return f.EvictionsPerHour }, 1, func(f *Figures, v float64) { f.EvictionsPerHour = v }},
	{"evictions / placed", func(f Figures) float64 { return f.EvictedShare }, 3, func(f *Figures, v float64) { f.EvictedShare = v }},
	{"pods evicted >1", func(f Figures) float64 { return float64(f.EvictedAgain) }, 0, func(f *Figures, v float64) { f.EvictedAgain = int(v) }},
	{"planned requested cpu min", func(f Figures) float64 { return f.LoadLow }, 2, func(f *Figures, v float64) { f.LoadLow = v }},
	{"planned requested cpu mean", func(f Figures) float64 { return f.LoadMean }, 2, func(f *Figures, v float64) { f.LoadMean = v }},
	{"planned requested cpu max", func(f Figures) float64 { return f.LoadHigh }, 2, func(f *Figures, v float64) { f.LoadHigh = v }},
	{"load in band", func(f Figures) float64 { return f.InBand }, 0, func(f *Figures, v float64) { f.InBand = v }},
	{"evicted twice <10 min", func(f Figures) float64 { return float64(f.EvictedQuickly) }, 0, func(f *Figures, v float64) { f.EvictedQuickly = int(v) }},
}

// unknownCell is a figure a merged older run did not measure (Result.Unknown), in results.md
// and results.csv alike.
const unknownCell = "-"

// runHeader is results.md's opening for a run: the command and its settings.
func runHeader(command string, rc RunConfig, seeds []uint64) string {
	return fmt.Sprintf("Command: `%s`\n\n", command) + fmt.Sprintf("Seeds %v; %d nodes of 16 cpu / 64 GiB; %.0f simulated minutes per run (first %.0f not measured); "+
		"pods' mean run %.0f min; simulated time runs %.0fx real time; usage %s.\n\n",
		seeds, rc.Cluster.Nodes, rc.Duration.Minutes(), rc.Warmup.Minutes(), rc.MeanRun.Minutes(), rc.Speed, usageName(rc.Model)) + deschedulerNote(rc)
}

// deschedulerNote is runHeader's line on the +descheduler runs, when the invocation has some.
func deschedulerNote(rc RunConfig) string {
	if rc.Descheduler == nil {
		return ""
	}
	return fmt.Sprintf("+descheduler: sigs.k8s.io/descheduler %s with the chart's policy for the metrics server, every %s simulated (%s real); "+
		"its metrics collector reads every 5 s real (%.0f s simulated), its smoothing scaled to simulated time. The lab creates no PodDisruptionBudget: "+
		"the evictions violate none (0, by construction; the e2e tests show budgets honoured).\n\n",
		harness.DeschedulerVersion, rc.Descheduler.Interval, max(time.Second, rc.real(rc.Descheduler.Interval)), collectorPeriod.Seconds()*rc.Speed)
}

// usageName describes the usage model of a run.
func usageName(m Model) string {
	if m.Traces == nil {
		return UsageSynthetic
	}
	return fmt.Sprintf("%s (PlanetLab day %s; cpu ratios x %g, cpu at most %gx the request)", UsageTrace, m.Traces.Day, m.CPUScale, m.CPUCap)
}

// writeReport writes results.md (header, every result, medians over seeds and ratios to the
// baselines), results.csv and the plots into dir.
func writeReport(dir, header string, results []Result) error {
	var md strings.Builder
	md.WriteString(header)
	head := []string{"workload", "scheduler", "seed"}
	for _, c := range columns {
		head = append(head, c.name)
	}
	fmt.Fprintf(&md, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	var rows [][]string
	for _, r := range results {
		row := []string{r.Workload, r.Scheduler, strconv.FormatUint(r.Seed, 10)}
		for _, c := range columns {
			if r.Unknown[c.name] {
				row = append(row, unknownCell)
				continue
			}
			row = append(row, strconv.FormatFloat(c.val(r.Figures), 'f', c.prec, 64))
		}
		rows = append(rows, row)
		fmt.Fprintf(&md, "| %s |\n", strings.Join(row, " | "))
	}
	// Medians over seeds, when there are several.
	if multiSeed(results) {
		fmt.Fprintf(&md, "\nMedians over seeds (the seeds whose planned load is within their workload's band)%s:\n\n| %s |\n|%s\n", outOfBandNote(results), strings.Join(append([]string{"workload", "scheduler", "seeds"}, head[3:]...), " | "), strings.Repeat("---|", len(head)))
		type key struct{ w, s string }
		groups := map[key][]Result{}
		var order []key
		for _, r := range results {
			if outOfBand(r) {
				continue
			}
			k := key{r.Workload, r.Scheduler}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], r)
		}
		for _, k := range order {
			row := []string{k.w, k.s, strconv.Itoa(len(groups[k]))}
			for _, c := range columns {
				var xs []float64
				for _, r := range groups[k] {
					if !r.Unknown[c.name] {
						xs = append(xs, c.val(r.Figures))
					}
				}
				if len(xs) == 0 {
					row = append(row, unknownCell)
					continue
				}
				row = append(row, strconv.FormatFloat(median(xs), 'f', c.prec, 64))
			}
			fmt.Fprintf(&md, "| %s |\n", strings.Join(row, " | "))
		}
	}
	md.WriteString(ratioTable(results))
	md.WriteString(referenceCheck(results))
	if err := writePlots(dir, results); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "results.csv"))
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	cw.Write(head)
	cw.WriteAll(rows)
	if err := cw.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// outOfBand tells whether r's planned load left its workload's band (a merged older run that
// did not check counts as in band).
func outOfBand(r Result) bool {
	return !r.Unknown["load in band"] && r.Figures.InBand == 0 && r.Figures.LoadMean > 0
}

// outOfBandNote names the runs left out of the medians and ratios, if any.
func outOfBandNote(results []Result) string {
	seen := map[string]bool{}
	var out []string
	for _, r := range results {
		if k := fmt.Sprintf("%s seed %d (requested cpu %.0f-%.0f %%)", r.Workload, r.Seed, 100*r.Figures.LoadLow, 100*r.Figures.LoadHigh); outOfBand(r) && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; out of band, left out: " + strings.Join(out, ", ")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
