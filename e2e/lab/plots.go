package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// writePlots writes, per workload: util-<w>.png (mean cpu utilization of the nodes in use over
// time, one line per scheduler, first seed), hot-<w>.png (nodes above 90 %), volume-<w>.png (cpu
// demanded above 90 %, cores), nodes-<w>.png (nodes in use over time), overload-<w>.png (the
// overload volume, cpu core-minutes above 90 %, median over seeds, per scheduler) and
// overload-nodemin-<w>.png (node-minutes above 90 %); merged results, which keep no series, get
// the bars only.
func writePlots(dir string, results []Result) error {
	var works []string
	byWork := map[string][]Result{}
	for _, r := range results {
		if _, ok := byWork[r.Workload]; !ok {
			works = append(works, r.Workload)
		}
		byWork[r.Workload] = append(byWork[r.Workload], r)
	}
	for _, w := range works {
		rs := byWork[w]
		first := rs[0].Seed
		var lines []Result
		for _, r := range rs {
			if r.Seed == first {
				lines = append(lines, r)
			}
		}
		if len(lines[0].Series) > 0 { // merged results (eval -merge) keep no series: bars only
			if err := linePlots(dir, w, first, lines); err != nil {
				return err
			}
		}
		// Overload bars: median over seeds per scheduler (seeds within their load band), in
		// first-seen order: the volume (the headline) and the node-minutes.
		var names []string
		vol, nodeMin := map[string][]float64{}, map[string][]float64{}
		for _, r := range rs {
			if outOfBand(r) {
				continue
			}
			if _, ok := vol[r.Scheduler]; !ok {
				names = append(names, r.Scheduler)
			}
			vol[r.Scheduler] = append(vol[r.Scheduler], r.Figures.OverCPUVolume)
			nodeMin[r.Scheduler] = append(nodeMin[r.Scheduler], r.Figures.Overload[1])
		}
		if len(names) == 0 {
			continue
		}
		if err := barPlot(filepath.Join(dir, "overload-"+w+".png"), w+": overload volume, cpu demanded above 90 % of allocatable, median over seeds",
			"core-minutes", names, vol); err != nil {
			return err
		}
		if err := barPlot(filepath.Join(dir, "overload-nodemin-"+w+".png"), w+": overloaded node-minutes (usage > 90 %), median over seeds",
			"node-minutes", names, nodeMin); err != nil {
			return err
		}
	}
	return nil
}

// barPlot writes one bar per name, the median of vals[name].
func barPlot(file, title, ylabel string, names []string, vals map[string][]float64) error {
	var bars plotter.Values
	for _, n := range names {
		bars = append(bars, median(vals[n]))
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	b, err := plotter.NewBarChart(bars, vg.Points(22))
	if err != nil {
		return err
	}
	b.Color = color.RGBA{R: 200, G: 60, B: 40, A: 255}
	p.Add(b)
	p.NominalX(names...)
	// Names slanted, so that long ones (pigeon-fewest, trimaran-lvrb) do not overlap.
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	width := max(7*vg.Inch, vg.Length(len(names))*0.7*vg.Inch) // room for every scheduler's name
	return p.Save(width, 3.6*vg.Inch, file)
}

// linePlots writes workload w's utilization, hot nodes and nodes in use over time, a line per
// scheduler of the first seed.
func linePlots(dir, w string, first uint64, lines []Result) error {
	util := func(p Point) float64 { return 100 * p.CPUInUse }
	nodes := func(p Point) float64 { return float64(p.NodesInUse) }
	if err := linePlot(filepath.Join(dir, "util-"+w+".png"),
		fmt.Sprintf("%s (seed %d): cpu utilization of the nodes in use", w, first), "% of allocatable", lines, util); err != nil {
		return err
	}
	hot := func(p Point) float64 { return float64(p.Hot) }
	if err := linePlot(filepath.Join(dir, "hot-"+w+".png"),
		fmt.Sprintf("%s (seed %d): nodes whose true usage is above 90 %%", w, first), "nodes", lines, hot); err != nil {
		return err
	}
	over := func(p Point) float64 { return p.OverCPU }
	if err := linePlot(filepath.Join(dir, "volume-"+w+".png"),
		fmt.Sprintf("%s (seed %d): cpu demanded above 90 %% of the nodes' allocatable", w, first), "cores", lines, over); err != nil {
		return err
	}
	if err := linePlot(filepath.Join(dir, "nodes-"+w+".png"),
		fmt.Sprintf("%s (seed %d): nodes in use", w, first), "nodes", lines, nodes); err != nil {
		return err
	}
	return nil
}

func linePlot(file, title, ylabel string, rs []Result, y func(Point) float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "simulated minutes"
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	for i, r := range rs {
		xys := make(plotter.XYs, len(r.Series))
		for j, pt := range r.Series {
			xys[j] = plotter.XY{X: pt.Minute, Y: y(pt)}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i / 7)
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(r.Scheduler, l)
	}
	return p.Save(7*vg.Inch, 3.6*vg.Inch, file)
}
