package main

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kube-safe-scheduler/extender/agents/safe/beta"
)

// Peak predictors on the lab's plan, offline (-predictors; issue 51): the pods of a seed are
// placed as kube-scheduler's defaults would (least allocated by requests, fitting by requests),
// and every evaluation step each node's cpu over the next horizon is predicted from its pods'
// workloads, learned as the usage learner would (each workload's pooled usage/request over the
// plan's minutes: its mean, standard deviation, median and percentiles), and compared with what
// the node's pods then use:
//   - beta-safe: safe's Beta risk of exceeding the threshold fed as safe's node model is
//     (agents/safe/compose.go, usage.Demand): each pod at its workload's p90 (the estimate
//     percentile) and spread (p90 - p50) / z(0.9), spreads linear within a workload and in
//     quadrature across;
//   - beta-moments: the same Beta risk fed by the learned mean and standard deviation;
//   - titl: Take it to the Limit's (EuroSys 2021) max(mean + N sigma, the sum of the pods'
//     p-th percentiles);
//   - n-sigma and percentile-sum: the two halves of titl alone.
//
// Each predictor's predicted peak is the cpu it expects to be exceeded with its acceptable
// probability (Beta: the 1-E quantile); it predicts "fits" when that peak is at most the
// threshold. A violation is a node-time predicted to fit whose pods then exceed the threshold
// within the horizon; the usable cpu is what the prediction leaves below the threshold, max(0,
// threshold - predicted peak), averaged over node-times: more is more packing.

// predictThreshold is the overload threshold of the lab's figures, share of allocatable.
const predictThreshold = 0.9

// Predictor is one peak predictor: Peak returns the node's predicted cpu peak (millicores) from
// its composition, capacity in millicores.
type Predictor struct {
	Name, Param string
	Peak        func(c *Composed, capacity float64) float64
}

// Composed is what a node's pods compose, in millicores: the sums of their workloads' learned
// means, p50s and percentiles, and the spreads (standard deviations) in the two correlations.
type Composed struct {
	Mean float64
	// Pct is the sum of the pods' p-th percentiles, by percentile (predictPercentiles).
	Pct map[int]float64
	// SafeLevel and SafeSigma: safe's demand (p90) and its spread (p90 - p50)/z(0.9), linear
	// within a workload, in quadrature across; SafeLevel75 and SafeSigma75 the same at p75
	// (SAFE_ESTIMATE_PERCENTILE=75).
	SafeLevel, SafeSigma, SafeLevel75, SafeSigma75 float64
	// SigmaLinear: the learned standard deviations, linear within a workload and in quadrature
	// across (safe's model); SigmaQuad: in quadrature within a workload too (pods independent).
	SigmaLinear, SigmaQuad float64
	// Before is the node's composition without the pod being placed, for a Marginal policy.
	Before *Composed
}

// expectedOver is E[(X - t)+] for X normal with the mean and standard deviation given.
func expectedOver(mean, sigma, t float64) float64 {
	if !(sigma > 0) {
		return math.Max(0, mean-t)
	}
	d := (t - mean) / sigma
	return (mean-t)*0.5*math.Erfc(d/math.Sqrt2) + sigma*math.Exp(-d*d/2)/math.Sqrt(2*math.Pi)
}

// learnedWorkload is one workload's pooled usage/request over the plan's minutes.
type learnedWorkload struct {
	mean, std float64
	pct       map[int]float64 // 50 and predictPercentiles
}

// z90 and z75 are the standard normal quantiles at 0.9 and 0.75, as usage.Demand's spread uses.
var z90, z75 = math.Sqrt2 * math.Erfinv(2*0.9-1), math.Sqrt2 * math.Erfinv(2*0.75-1)

// betaPeak is the utilization u, times capacity, that safe's Beta fit of (mean, sigma) exceeds
// with probability e: the Beta's 1-e quantile, by bisection on beta.Risk.
func betaPeak(mean, sigma, capacity, e float64) float64 {
	mu, s := mean/capacity, sigma/capacity
	if mu >= 1 {
		return capacity
	}
	if mu <= 0 {
		return 0
	}
	lo, hi := 0.0, 1.0
	for range 40 {
		mid := (lo + hi) / 2
		if beta.Risk(mu, s, mid) > e {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi * capacity
}

// Predictors are the predictors -predictors compares, each family swept over its setting.
func Predictors() []Predictor {
	var ps []Predictor
	es := []float64{0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.001}
	// The Beta families: the Beta fitted to a level and spread of the composition.
	for _, f := range []struct {
		name string
		at   func(*Composed) (level, sigma float64)
	}{
		{"beta-safe", func(c *Composed) (float64, float64) { return c.SafeLevel, c.SafeSigma }},
		{"beta-safe-p75", func(c *Composed) (float64, float64) { return c.SafeLevel75, c.SafeSigma75 }},
		{"beta-moments", func(c *Composed) (float64, float64) { return c.Mean, c.SigmaLinear }},
		{"beta-moments-quad", func(c *Composed) (float64, float64) { return c.Mean, c.SigmaQuad }},
	} {
		for _, e := range es {
			ps = append(ps, Predictor{f.name, fmt.Sprintf("E=%g", e), func(c *Composed, cp float64) float64 {
				level, sigma := f.at(c)
				return betaPeak(level, sigma, cp, e)
			}})
		}
	}
	for _, n := range []float64{0, 1, 2, 3} {
		for _, p := range predictPercentiles {
			ps = append(ps, Predictor{"titl", fmt.Sprintf("N=%g p%d", n, p), func(c *Composed, _ float64) float64 {
				return math.Max(c.Mean+n*c.SigmaLinear, c.Pct[p])
			}})
		}
	}
	for _, n := range []float64{0.5, 1, 1.5, 2, 2.5, 3, 4} {
		ps = append(ps, Predictor{"n-sigma", fmt.Sprintf("N=%g", n), func(c *Composed, _ float64) float64 { return c.Mean + n*c.SigmaLinear }})
		ps = append(ps, Predictor{"n-sigma-quad", fmt.Sprintf("N=%g", n), func(c *Composed, _ float64) float64 { return c.Mean + n*c.SigmaQuad }})
	}
	return ps
}

// predictPercentiles are the percentiles a node's pods sum (titl; N=0 is the sum alone).
var predictPercentiles = []int{75, 80, 85, 90, 95, 99}

// Frontier is, per predictor family, the most usable cpu among its settings whose violations
// are at most maxRate of its fits (and the setting): the families compared at one safety.
func Frontier(p Prediction, maxRate float64) map[string]PredictorScore {
	best := map[string]PredictorScore{}
	for _, s := range p.Scores {
		if s.Fits == 0 || float64(s.Violations) > maxRate*float64(s.Fits) {
			continue
		}
		if b, ok := best[s.Predictor]; !ok || s.Usable > b.Usable {
			best[s.Predictor] = s
		}
	}
	return best
}

// learn returns each workload's learnedWorkload from its pooled usage/request samples.
func learn(samples map[string][]float64) map[string]learnedWorkload {
	learned := map[string]learnedWorkload{}
	for name, xs := range samples {
		sort.Float64s(xs)
		var sum, sq float64
		for _, x := range xs {
			sum += x
		}
		mean := sum / float64(len(xs))
		for _, x := range xs {
			sq += (x - mean) * (x - mean)
		}
		l := learnedWorkload{mean: mean, std: math.Sqrt(sq / float64(len(xs))), pct: map[int]float64{}}
		for _, p := range append([]int{50}, predictPercentiles...) {
			l.pct[p] = xs[min(len(xs)-1, int(math.Ceil(float64(p)/100*float64(len(xs))))-1)]
		}
		learned[name] = l
	}
	return learned
}

// Member is a pod on a node as the composition sees it: its workload and cpu request
// (millicores).
type Member struct {
	Workload string
	Request  float64
}

// compose sums the learned workloads of a node's pods (see Composed); shared reports whether
// two or more pods of one workload with a spread are among them (where the correlations differ).
func compose(pods []Member, learned map[string]learnedWorkload) (Composed, bool) {
	c := Composed{Pct: map[int]float64{}}
	type group struct{ lin, quad, safe, safe75 float64 }
	groups := map[string]*group{}
	var names []string
	for _, q := range pods {
		l := learned[q.Workload]
		c.Mean += l.mean * q.Request
		for _, p := range predictPercentiles {
			c.Pct[p] += l.pct[p] * q.Request
		}
		c.SafeLevel += l.pct[90] * q.Request
		c.SafeLevel75 += l.pct[75] * q.Request
		g := groups[q.Workload]
		if g == nil {
			g = &group{}
			groups[q.Workload] = g
			names = append(names, q.Workload)
		}
		g.lin += l.std * q.Request
		g.quad += l.std * l.std * q.Request * q.Request
		g.safe += math.Max(0, l.pct[90]-l.pct[50]) / z90 * q.Request
		g.safe75 += math.Max(0, l.pct[75]-l.pct[50]) / z75 * q.Request
	}
	var vl, vq, vs, vs75 float64
	shared := false
	for _, n := range names {
		g := groups[n]
		vl += g.lin * g.lin
		vq += g.quad
		vs += g.safe * g.safe
		vs75 += g.safe75 * g.safe75
		if g.lin*g.lin > g.quad*(1+1e-9) {
			shared = true
		}
	}
	c.SigmaLinear, c.SigmaQuad, c.SafeSigma, c.SafeSigma75 = math.Sqrt(vl), math.Sqrt(vq), math.Sqrt(vs), math.Sqrt(vs75)
	return c, shared
}

// PredictorScore is one predictor's record over the node-times of a run.
type PredictorScore struct {
	Predictor, Param string
	// NodeTimes judged; Fits predicted to fit; Violations of those that then exceeded the
	// threshold within the horizon.
	NodeTimes, Fits, Violations int
	// Usable is the mean cpu (cores) the prediction leaves below the threshold.
	Usable float64
}

// Prediction is -predictors' result for one workload and seed.
type Prediction struct {
	Workload string
	Seed     uint64
	// NodeTimes judged, Over of them exceeded the threshold within the horizon; Usable is the
	// cpu (cores) the true peak leaves below the threshold (the clairvoyant's, for scale).
	NodeTimes, Over int
	Usable          float64
	Scores          []PredictorScore
	// Calibration of the two correlations: the mean squared deviation of a node's cpu at the
	// evaluation minute from its composed mean, over the mean composed variance, linear within
	// a workload and in quadrature (1 is calibrated; above 1 the model is too narrow); and the
	// share of node-times whose horizon peak exceeds mean + 2 sigma, each way.
	DevOverLinear, DevOverQuad float64
	Over2Linear, Over2Quad     float64
	// NodeTimesShared counts the node-times with two or more pods of one workload (where the
	// two correlations differ).
	NodeTimesShared int
}

// Predict places w's pods on c by requests and scores every predictor of ps on every node
// every step from warmup while a whole horizon remains before duration.
func Predict(w Workload, m Model, seed uint64, c Cluster, duration, warmup, horizon, step time.Duration, ps []Predictor) (Prediction, error) {
	if horizon <= 0 || step <= 0 || warmup+horizon > duration {
		return Prediction{}, fmt.Errorf("need horizon > 0, step > 0 and warmup + horizon <= duration (%v + %v > %v)", warmup, horizon, duration)
	}
	minutes := int(math.Ceil(duration.Minutes()))
	// Each pod's cpu in every minute of its run, at the middle of the minute, as planFor.
	type pod struct {
		p          *PodPlan
		from, end  int // minutes [from, end)
		cpu        []float64
		start, off time.Duration
	}
	pods := make([]*pod, len(w.Pods))
	samples := map[string][]float64{}
	for i := range w.Pods {
		pp := &w.Pods[i]
		from := int(pp.Arrive / time.Minute)
		end := min(minutes, int(math.Ceil((pp.Arrive + pp.Duration).Minutes())))
		q := &pod{p: pp, from: from, end: end, start: pp.Arrive, off: pp.Arrive + pp.Duration}
		for mm := from; mm < end; mm++ {
			u, _ := m.Usage(seed, pp, time.Duration(mm)*time.Minute+30*time.Second)
			q.cpu = append(q.cpu, u)
			samples[pp.Workload] = append(samples[pp.Workload], u/float64(pp.CPU))
		}
		pods[i] = q
	}
	learned := learn(samples)
	capacity := float64(c.CPU)
	limit := predictThreshold * capacity
	out := Prediction{Workload: w.Name, Seed: seed, Scores: make([]PredictorScore, len(ps))}
	for i, p := range ps {
		out.Scores[i] = PredictorScore{Predictor: p.Name, Param: p.Param}
	}
	// Placement: arrivals in order, departures first; each pod on the fitting node least
	// allocated by requests (the mean of its cpu and memory shares free, as kube-scheduler's
	// LeastAllocated), ties to the lowest index.
	type node struct {
		cpu, mem int64
		pods     map[*pod]bool
	}
	nodes := make([]*node, c.Nodes)
	for i := range nodes {
		nodes[i] = &node{pods: map[*pod]bool{}}
	}
	order := append([]*pod(nil), pods...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].start < order[j].start })
	var devSq, varLin, varQuad float64
	var over2Lin, over2Quad int
	next := 0
	for t := warmup; t+horizon <= duration; t += step {
		for ; next < len(order) && order[next].start <= t; next++ {
			q := order[next]
			for _, n := range nodes {
				for r := range n.pods {
					if r.off <= q.start {
						delete(n.pods, r)
						n.cpu -= r.p.CPU
						n.mem -= r.p.Memory
					}
				}
			}
			best, bestScore := -1, -1.0
			for i, n := range nodes {
				if n.cpu+q.p.CPU > c.CPU || n.mem+q.p.Memory > c.Memory {
					continue
				}
				s := (float64(c.CPU-n.cpu-q.p.CPU)/float64(c.CPU) + float64(c.Memory-n.mem-q.p.Memory)/float64(c.Memory)) / 2
				if s > bestScore {
					best, bestScore = i, s
				}
			}
			if best >= 0 {
				n := nodes[best]
				n.pods[q] = true
				n.cpu += q.p.CPU
				n.mem += q.p.Memory
			}
		}
		m0 := int(t / time.Minute)
		for _, n := range nodes {
			var on []*pod
			for q := range n.pods {
				if q.off > t {
					on = append(on, q)
				}
			}
			if len(on) == 0 {
				continue
			}
			sort.Slice(on, func(i, j int) bool { return on[i].p.Index < on[j].p.Index })
			var now float64
			members := make([]Member, len(on))
			for i, q := range on {
				members[i] = Member{Workload: q.p.Workload, Request: float64(q.p.CPU)}
				if m0 >= q.from && m0 < q.end {
					now += q.cpu[m0-q.from]
				}
			}
			comp, shared := compose(members, learned)
			vl, vq := comp.SigmaLinear*comp.SigmaLinear, comp.SigmaQuad*comp.SigmaQuad
			// The truth: the pods on the node now, each while it runs, over the horizon.
			peak := 0.0
			for mm := m0; mm < m0+int(horizon/time.Minute); mm++ {
				sum := 0.0
				for _, q := range on {
					if mm >= q.from && mm < q.end {
						sum += q.cpu[mm-q.from]
					}
				}
				peak = math.Max(peak, sum)
			}
			out.NodeTimes++
			if shared {
				out.NodeTimesShared++
			}
			if peak > limit {
				out.Over++
			}
			out.Usable += math.Max(0, limit-peak) / 1000
			devSq += (now - comp.Mean) * (now - comp.Mean)
			varLin += vl
			varQuad += vq
			if peak > comp.Mean+2*comp.SigmaLinear {
				over2Lin++
			}
			if peak > comp.Mean+2*comp.SigmaQuad {
				over2Quad++
			}
			for i, p := range ps {
				pk := p.Peak(&comp, capacity)
				s := &out.Scores[i]
				s.NodeTimes++
				s.Usable += math.Max(0, limit-pk) / 1000
				if pk <= limit {
					s.Fits++
					if peak > limit {
						s.Violations++
					}
				}
			}
		}
	}
	if out.NodeTimes == 0 {
		return out, fmt.Errorf("%s seed %d: no node held a pod at any evaluation step", w.Name, seed)
	}
	out.Usable /= float64(out.NodeTimes)
	for i := range out.Scores {
		out.Scores[i].Usable /= float64(out.NodeTimes)
	}
	if varLin > 0 {
		out.DevOverLinear = devSq / varLin
	}
	if varQuad > 0 {
		out.DevOverQuad = devSq / varQuad
	}
	out.Over2Linear, out.Over2Quad = float64(over2Lin)/float64(out.NodeTimes), float64(over2Quad)/float64(out.NodeTimes)
	return out, nil
}

// predictionsTable is -predictors' markdown: per workload and seed, each predictor's fits,
// violations and usable cpu, then the correlations' calibration.
func predictionsTable(ps []Prediction, horizon time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Peak predictors on the plan (pods placed least allocated by requests; each node every step, its pods' cpu over the next %v against %.0f %% of allocatable; "+
		"a violation is a node-time predicted to fit that then exceeds; usable is the cpu, cores per node, the prediction leaves below the threshold; docs/quality.md, issue 51):\n\n", horizon, 100*predictThreshold)
	families := []string{}
	for _, s := range Predictors() {
		if !slices.Contains(families, s.Name) {
			families = append(families, s.Name)
		}
	}
	for _, rate := range []float64{0.01, 0.002} {
		fmt.Fprintf(&b, "Usable cores per node of each family's best setting with violations at most %g %% of its fits (clairvoyant: the true peak's; "+
			"the median counts a family with no such setting as 0, as it must refuse every node to stay that safe):\n\n| predictor | median |", 100*rate)
		var clair []float64
		for _, p := range ps {
			fmt.Fprintf(&b, " %s %d |", p.Workload, p.Seed)
			clair = append(clair, p.Usable)
		}
		fmt.Fprintf(&b, "\n|---|---:|"+strings.Repeat("---:|", len(ps))+"\n| clairvoyant | %.2f |", median(clair))
		for _, p := range ps {
			fmt.Fprintf(&b, " %.2f |", p.Usable)
		}
		b.WriteString("\n")
		fronts := make([]map[string]PredictorScore, len(ps))
		for i, p := range ps {
			fronts[i] = Frontier(p, rate)
		}
		for _, f := range families {
			var us []float64
			for i := range ps {
				us = append(us, fronts[i][f].Usable)
			}
			fmt.Fprintf(&b, "| %s | %.2f |", f, median(us))
			for i := range ps {
				if s, ok := fronts[i][f]; ok {
					fmt.Fprintf(&b, " %.2f (%s) |", s.Usable, s.Param)
				} else {
					b.WriteString(" - |")
				}
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	for _, p := range ps {
		fmt.Fprintf(&b, "%s seed %d: %d node-times, %d exceed (%.1f %%), %d with replicas of one workload; the true peak leaves %.2f cores usable. "+
			"Correlation: deviation^2 / composed variance %.2f linear within a workload, %.2f in quadrature; peak over mean + 2 sigma %.1f %% linear, %.1f %% quadrature.\n\n",
			p.Workload, p.Seed, p.NodeTimes, p.Over, 100*float64(p.Over)/float64(p.NodeTimes), p.NodeTimesShared, p.Usable,
			p.DevOverLinear, p.DevOverQuad, 100*p.Over2Linear, 100*p.Over2Quad)
		b.WriteString("| predictor | setting | fits | violations | violations / fits | usable cores |\n|---|---|---:|---:|---:|---:|\n")
		for _, s := range p.Scores {
			rate := "-"
			if s.Fits > 0 {
				rate = fmt.Sprintf("%.1f %%", 100*float64(s.Violations)/float64(s.Fits))
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %.2f |\n", s.Predictor, s.Param, s.Fits, s.Violations, rate, s.Usable)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// DailyCheck is what the fixtures say of a workload's daily shape (hour-of-day level), from the
// PlanetLab VMs present on two days (the fixtures are one day each, so a profile learned on one
// day can be tested only on the other): how well each of three predictions matches a VM's
// hourly mean cpu on day B, as the median over VM-hours of |log((pred + 1) / (actual + 1))|
// (cpu in percent): day A's daily mean (a time-blind learner), day A's hourly means (a learner
// that has seen a day), and day B's own daily mean (the time-blind ideal on B). Within day B,
// HourShare is the median over VMs of the share of the five-minute variance that the hourly
// means explain (what an hour-of-day profile could remove at best, in sample).
type DailyCheck struct {
	DayA, DayB                       string
	VMs                              int
	FlatA, HourlyA, FlatB, HourShare float64
	// PeakFlatA and PeakHourlyA: the share of VM-hours whose five-minute peak on day B exceeds
	// day A's p90 over the day, and day A's max of the same hour (a daily profile of peaks).
	PeakFlatA, PeakHourlyA float64
}

// readDay reads a PlanetLab fixture's raw five-minute cpu percentages by VM.
func readDay(dir, day string) (map[string][]float64, error) {
	vms := map[string][]float64{}
	err := readCSV(fmt.Sprintf("%s/planetlab-%s.csv", dir, day), false, func(rec []string) error {
		if len(rec) != 289 {
			return fmt.Errorf("%d fields, want a name and 288 five-minute values", len(rec))
		}
		v := make([]float64, 288)
		for i, f := range rec[1:] {
			if _, err := fmt.Sscan(f, &v[i]); err != nil {
				return fmt.Errorf("value %d %q: %v", i+1, f, err)
			}
		}
		vms[rec[0]] = v
		return nil
	})
	return vms, err
}

// CheckDaily compares days a and b of the fixtures in dir (see DailyCheck).
func CheckDaily(dir, a, b string) (DailyCheck, error) {
	da, err := readDay(dir, a)
	if err != nil {
		return DailyCheck{}, err
	}
	db, err := readDay(dir, b)
	if err != nil {
		return DailyCheck{}, err
	}
	d := DailyCheck{DayA: a, DayB: b}
	var flatA, hourlyA, flatB, share []float64
	peakFlat, peakHourly, hours := 0, 0, 0
	hourly := func(v []float64, i int) (mean, peak float64) {
		for _, x := range v[12*i : 12*i+12] {
			mean += x / 12
			peak = math.Max(peak, x)
		}
		return mean, peak
	}
	names := make([]string, 0, len(da))
	for n := range da {
		if db[n] != nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		va, vb := da[n], db[n]
		meanA, meanB := mean(va), mean(vb)
		p90A := append([]float64(nil), va...)
		sort.Float64s(p90A)
		q90 := p90A[int(0.9*float64(len(p90A)))-1]
		var total, within float64
		for h := range 24 {
			ha, pa := hourly(va, h)
			hb, pb := hourly(vb, h)
			flatA = append(flatA, math.Abs(math.Log((meanA+1)/(hb+1))))
			hourlyA = append(hourlyA, math.Abs(math.Log((ha+1)/(hb+1))))
			flatB = append(flatB, math.Abs(math.Log((meanB+1)/(hb+1))))
			hours++
			if pb > q90 {
				peakFlat++
			}
			if pb > pa {
				peakHourly++
			}
			for _, x := range vb[12*h : 12*h+12] {
				total += (x - meanB) * (x - meanB)
				within += (x - hb) * (x - hb)
			}
		}
		if total > 0 {
			share = append(share, 1-within/total)
		}
	}
	if len(names) == 0 {
		return d, fmt.Errorf("days %s and %s share no VM", a, b)
	}
	d.VMs = len(names)
	d.FlatA, d.HourlyA, d.FlatB, d.HourShare = median(flatA), median(hourlyA), median(flatB), median(share)
	d.PeakFlatA, d.PeakHourlyA = float64(peakFlat)/float64(hours), float64(peakHourly)/float64(hours)
	return d, nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// dailyTable is CheckDaily's result both ways, in markdown.
func dailyTable(ds []DailyCheck) string {
	var b strings.Builder
	b.WriteString("Daily shape on the fixtures (PlanetLab VMs present on both days; median |log| of a VM-hour's mean cpu over its prediction, +1 %; " +
		"peak: share of VM-hours whose five-minute peak on B exceeds the prediction):\n\n" +
		"| learned on | tested on | VMs | A's daily mean | A's hourly means | B's own daily mean | hourly share of B's variance | peak > A's p90 | peak > A's hourly max |\n" +
		"|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, d := range ds {
		fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %.2f | %.2f | %.2f | %.1f %% | %.1f %% |\n", d.DayA, d.DayB, d.VMs, d.FlatA, d.HourlyA, d.FlatB, d.HourShare, 100*d.PeakFlatA, 100*d.PeakHourlyA)
	}
	return b.String() + "\n"
}

// Horizon and step of -predictors: each node judged every predictStep for its cpu over the next
// predictHorizon (the annotator's window).
const (
	predictHorizon = 15 * time.Minute
	predictStep    = 5 * time.Minute
)

// runPredictors prints -predictors' tables: the predictors on every workload and seed of the
// run's settings, and the daily shape both ways between the fixtures' days in dir.
func runPredictors(rc RunConfig, works []string, seeds []uint64, dir string) error {
	var ps []Prediction
	for _, seed := range seeds {
		for _, name := range works {
			w, err := Generate(strings.TrimSpace(name), rc.Cluster, rc.Duration, rc.MeanRun, seed, rc.Model)
			if err != nil {
				return err
			}
			p, err := Predict(w, rc.Model, seed, rc.Cluster, rc.Duration, rc.Warmup, predictHorizon, predictStep, Predictors())
			if err != nil {
				return err
			}
			ps = append(ps, p)
		}
	}
	fmt.Print(predictionsTable(ps, predictHorizon))
	var places [][]PlacementScore
	var names []string
	for _, seed := range seeds {
		for _, name := range works {
			w, err := Generate(strings.TrimSpace(name), rc.Cluster, rc.Duration, rc.MeanRun, seed, rc.Model)
			if err != nil {
				return err
			}
			places = append(places, Place(w, rc.Model, seed, rc.Cluster, rc.Duration, rc.Warmup, Policies()))
			names = append(names, fmt.Sprintf("%s %d", w.Name, seed))
		}
	}
	fmt.Print(placementTable(names, places))
	days := TraceDays(dir)
	var ds []DailyCheck
	for _, a := range days {
		for _, b := range days {
			if a == b {
				continue
			}
			d, err := CheckDaily(dir, a, b)
			if err != nil {
				return err
			}
			ds = append(ds, d)
		}
	}
	fmt.Print(dailyTable(ds))
	return nil
}

// Policy is an offline placement rule for -predictors' placement comparison: the score of a node
// (higher is better) given its requests and its pods' composition with the pod added, both as
// shares of the node's capacity.
type Policy struct {
	Name, About string
	Score       func(reqCPU, reqMem float64, c *Composed, capacity float64) float64
	// Observed, when set, replaces the composition's Mean by what could be observed before the
	// pod's arrival, as a learner that sees usage every minute could: each workload at the mean
	// usage/request of its pods over the last Window (every minute observed so far when Window
	// is 0 or there is no sample in it; the request when there is none at all), and with PodNow
	// each pod already on the node at its own usage in the last minute.
	Observed bool
	Window   time.Duration
	PodNow   bool
	// Marginal: the composition carries Before, the node's without the pod.
	Marginal bool
	// Clairvoyant replaces Score: the node where the pod's true usage adds the least cpu above
	// the threshold over its life, given the true usage of the pods placed, then the lowest
	// mean load over that life (the lab's oracle scheduler, offline).
	Clairvoyant bool
}

// Policies compare, without the lab's noise, what the learner's knowledge is worth when it is
// alone and when kube-scheduler's request scores are mixed in (their 0..100 scores, summed
// with equal weight, as the lab's safe-learn profile does with safe's extender scores).
func Policies() []Policy {
	leastAllocated := func(rc, rm float64) float64 { return 100 * ((1 - rc) + (1 - rm)) / 2 }
	level := func(l float64, cp float64) float64 { return 100 * (1 - l/cp) }
	return []Policy{
		{Name: "requests", About: "LeastAllocated on requests (kube-scheduler's defaults' main score)", Score: func(rc, rm float64, _ *Composed, _ float64) float64 { return leastAllocated(rc, rm) }},
		{Name: "level-mean", About: "the node whose cpu at its pods' learned means stays lowest (workload-level, learned)", Score: func(_, _ float64, c *Composed, cp float64) float64 { return level(c.Mean, cp) }},
		{Name: "level-p90", About: "the node whose cpu at its pods' learned p90s stays lowest (safe-learn's estimate)", Score: func(_, _ float64, c *Composed, cp float64) float64 { return level(c.SafeLevel, cp) }},
		{Name: "level-p90-clamped", About: "level-p90 with the level clamped at the capacity, as safe's mu is: every node projected full scores the same", Score: func(_, _ float64, c *Composed, cp float64) float64 { return 100 * (1 - math.Min(1, c.SafeLevel/cp)) }},
		{Name: "safe-balance", About: "safe-balance's objective, fine: (mu + sqrt(sigma)) / 2 of the p90 level and the composed spread, mu clamped at 1", Score: func(_, _ float64, c *Composed, cp float64) float64 {
			return -(math.Min(1, c.SafeLevel/cp) + math.Sqrt(math.Min(1, c.SafeSigma/cp))) / 2
		}},
		{Name: "safe-balance-unclamped", About: "safe-balance's objective with mu not clamped", Score: func(_, _ float64, c *Composed, cp float64) float64 {
			return -(c.SafeLevel/cp + math.Sqrt(math.Min(1, c.SafeSigma/cp))) / 2
		}},
		{Name: "level-p90+sigma", About: "the p90s plus the composed spread (safe-balance's mu + sigma)", Score: func(_, _ float64, c *Composed, cp float64) float64 { return level(c.SafeLevel+c.SafeSigma, cp) }},
		{Name: "level-observed", About: "level-mean, each workload at the mean of what its pods used so far (causal: no sample after the arrival)",
			Score: func(_, _ float64, c *Composed, cp float64) float64 { return level(c.Mean, cp) }, Observed: true},
		{Name: "level-observed-10m", About: "each workload at the mean its pods used over the last 10 minutes (the daily shape's phase, where replicas move in step)",
			Score: func(_, _ float64, c *Composed, cp float64) float64 { return level(c.Mean, cp) }, Observed: true, Window: 10 * time.Minute},
		{Name: "level-observed-3m", About: "the same over the last 3 minutes",
			Score: func(_, _ float64, c *Composed, cp float64) float64 { return level(c.Mean, cp) }, Observed: true, Window: 3 * time.Minute},
		{Name: "pods-now", About: "each pod on the node at its own usage in the last minute, the new pod at its workload's last 10 minutes (fresh per-pod usage)",
			Score: func(_, _ float64, c *Composed, cp float64) float64 { return level(c.Mean, cp) }, Observed: true, Window: 10 * time.Minute, PodNow: true},
		{Name: "clairvoyant", About: "the oracle: every pod's true usage over its life, the node where the pod adds the least cpu above 90 %, then the lowest load", Clairvoyant: true},
		{Name: "overload-marginal", About: "the node where the pod adds the least expected cpu above 90 % (normal, learned means, spread linear within a workload), then the lowest mean level: the oracle's objective on the learner's knowledge",
			Score: marginalOverload, Marginal: true},
		{Name: "overload-marginal-now", About: "overload-marginal with the pods at their usage in the last minute (pods-now's means)",
			Score: marginalOverload, Marginal: true, Observed: true, Window: 10 * time.Minute, PodNow: true},
		{Name: "level-mean+requests", About: "level-mean and LeastAllocated, equal weights", Score: func(rc, rm float64, c *Composed, cp float64) float64 {
			return level(c.Mean, cp) + leastAllocated(rc, rm)
		}},
		{Name: "level-p90+requests", About: "level-p90 and LeastAllocated, equal weights", Score: func(rc, rm float64, c *Composed, cp float64) float64 {
			return level(c.SafeLevel, cp) + leastAllocated(rc, rm)
		}},
		{Name: "level-p90+2requests", About: "level-p90 and LeastAllocated and BalancedAllocation's weight again", Score: func(rc, rm float64, c *Composed, cp float64) float64 {
			return level(c.SafeLevel, cp) + 2*leastAllocated(rc, rm)
		}},
	}
}

// marginalOverload scores a node by the expected cpu above predictThreshold the pod adds to it
// (c against c.Before), the lower the better, ties (none expected) broken by the mean level.
func marginalOverload(_, _ float64, c *Composed, cp float64) float64 {
	t := predictThreshold * cp
	add := expectedOver(c.Mean, c.SigmaLinear, t) - expectedOver(c.Before.Mean, c.Before.SigmaLinear, t)
	return -1e3*add/cp - c.Mean/cp
}

// PlacementScore is one policy's result: the cpu overload volume above the threshold
// (core-minutes, after the warm-up) and the pods placed.
type PlacementScore struct {
	Policy string
	Volume float64
	Placed int
}

// Place places w's pods on c by each policy (fitting by requests, ties to the lowest node) and
// measures the cpu volume above the threshold from warmup to duration.
func Place(w Workload, m Model, seed uint64, c Cluster, duration, warmup time.Duration, policies []Policy) []PlacementScore {
	minutes := int(math.Ceil(duration.Minutes()))
	usage := make([][]float64, len(w.Pods))
	samples := map[string][]float64{}
	for i := range w.Pods {
		pp := &w.Pods[i]
		from := int(pp.Arrive / time.Minute)
		end := min(minutes, int(math.Ceil((pp.Arrive + pp.Duration).Minutes())))
		for mm := from; mm < end; mm++ {
			u, _ := m.Usage(seed, pp, time.Duration(mm)*time.Minute+30*time.Second)
			usage[i] = append(usage[i], u)
			samples[pp.Workload] = append(samples[pp.Workload], u/float64(pp.CPU))
		}
	}
	learned := learn(samples)
	// Per workload and minute: the sum and count of its pods' usage/request, for Observed.
	type perMinute struct{ sum, n []float64 }
	byMinute := map[string]*perMinute{}
	for i := range w.Pods {
		pp := &w.Pods[i]
		pm := byMinute[pp.Workload]
		if pm == nil {
			pm = &perMinute{make([]float64, minutes), make([]float64, minutes)}
			byMinute[pp.Workload] = pm
		}
		from := int(pp.Arrive / time.Minute)
		for k, u := range usage[i] {
			pm.sum[from+k] += u / float64(pp.CPU)
			pm.n[from+k]++
		}
	}
	// observed is a workload's mean usage/request over the minutes [now-window, now) (all
	// before now when window is 0 or holds no sample; 1, the request, when none does).
	observed := func(wl string, now int, window time.Duration) float64 {
		pm := byMinute[wl]
		if pm == nil {
			return 1
		}
		mean := func(from int) (float64, bool) {
			var s, n float64
			for mm := max(0, from); mm < now && mm < minutes; mm++ {
				s, n = s+pm.sum[mm], n+pm.n[mm]
			}
			return s / n, n > 0
		}
		if window > 0 {
			if r, ok := mean(now - int(window/time.Minute)); ok {
				return r
			}
		}
		if r, ok := mean(0); ok {
			return r
		}
		return 1
	}
	capacity := float64(c.CPU)
	var out []PlacementScore
	for _, pol := range policies {
		type node struct {
			cpu, mem int64
			pods     []int
			load     []float64 // cpu per minute
		}
		nodes := make([]*node, c.Nodes)
		for i := range nodes {
			nodes[i] = &node{load: make([]float64, minutes)}
		}
		placed := 0
		seenAt := map[string]float64{}
		for i := range w.Pods {
			pp := &w.Pods[i]
			best, bestScore := -1, math.Inf(-1)
			// seen is observed at this pod's arrival, each workload's computed once for all the
			// candidate nodes' members.
			clear(seenAt)
			seen := func(wl string) float64 {
				r, ok := seenAt[wl]
				if !ok {
					r = observed(wl, int(pp.Arrive/time.Minute), pol.Window)
					seenAt[wl] = r
				}
				return r
			}
			for j, n := range nodes {
				// Drop the pods gone by now.
				kept := n.pods[:0]
				for _, k := range n.pods {
					if w.Pods[k].Arrive+w.Pods[k].Duration > pp.Arrive {
						kept = append(kept, k)
					} else {
						n.cpu -= w.Pods[k].CPU
						n.mem -= w.Pods[k].Memory
					}
				}
				n.pods = kept
				if n.cpu+pp.CPU > c.CPU || n.mem+pp.Memory > c.Memory {
					continue
				}
				if pol.Clairvoyant {
					from := int(pp.Arrive / time.Minute)
					var add, sum float64
					for k, u := range usage[i] {
						l := n.load[from+k]
						add += math.Max(0, l+u-predictThreshold*capacity) - math.Max(0, l-predictThreshold*capacity)
						sum += l
					}
					if s := -add - sum/float64(max(1, len(usage[i])))/capacity*1e-3; s > bestScore {
						best, bestScore = j, s
					}
					continue
				}
				members := make([]Member, 0, len(n.pods)+1)
				for _, k := range n.pods {
					members = append(members, Member{Workload: w.Pods[k].Workload, Request: float64(w.Pods[k].CPU)})
				}
				members = append(members, Member{Workload: pp.Workload, Request: float64(pp.CPU)})
				comp, _ := compose(members, learned)
				if pol.Marginal {
					before, _ := compose(members[:len(members)-1], learned)
					comp.Before = &before
				}
				if pol.Observed {
					now := int(pp.Arrive / time.Minute)
					own := seen(pp.Workload) * float64(pp.CPU)
					comp.Mean = own
					for _, k := range n.pods {
						q := &w.Pods[k]
						if from := int(q.Arrive / time.Minute); pol.PodNow && from < now && now-1-from < len(usage[k]) {
							comp.Mean += usage[k][now-1-from]
						} else {
							comp.Mean += seen(q.Workload) * float64(q.CPU)
						}
					}
					if comp.Before != nil {
						comp.Before.Mean = comp.Mean - own
					}
				}
				s := pol.Score(float64(n.cpu+pp.CPU)/capacity, float64(n.mem+pp.Memory)/float64(c.Memory), &comp, capacity)
				if s > bestScore {
					best, bestScore = j, s
				}
			}
			if best < 0 {
				continue
			}
			placed++
			n := nodes[best]
			n.pods = append(n.pods, i)
			n.cpu += pp.CPU
			n.mem += pp.Memory
			from := int(pp.Arrive / time.Minute)
			for k, u := range usage[i] {
				n.load[from+k] += u
			}
		}
		vol := 0.0
		for _, n := range nodes {
			for mm := int(warmup / time.Minute); mm < minutes; mm++ {
				vol += math.Max(0, n.load[mm]-predictThreshold*capacity) / 1000
			}
		}
		out = append(out, PlacementScore{Policy: pol.Name, Volume: vol, Placed: placed})
	}
	return out
}

// placementTable is Place's results in markdown: each policy's cpu volume above the threshold as a
// ratio to the requests policy's, per workload and seed, and the median.
func placementTable(names []string, places [][]PlacementScore) string {
	var b strings.Builder
	b.WriteString("Offline placements of the same pods (fitting by requests; learned as above): cpu core-minutes above 90 % after the warm-up, " +
		"ratio to LeastAllocated on requests (its volume in brackets), and the pods placed:\n\n| policy | median |")
	for _, n := range names {
		b.WriteString(" " + n + " |")
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(names)) + "\n")
	for i, pol := range Policies() {
		var rs []float64
		for _, p := range places {
			rs = append(rs, p[i].Volume/math.Max(p[0].Volume, 1e-9))
		}
		fmt.Fprintf(&b, "| %s | %.2f |", pol.Name, median(rs))
		for j, p := range places {
			if i == 0 {
				fmt.Fprintf(&b, " 1 (%.0f; %d) |", p[0].Volume, p[0].Placed)
			} else {
				fmt.Fprintf(&b, " %.2f (%d) |", rs[j], p[i].Placed)
			}
		}
		b.WriteString("\n")
	}
	return b.String() + "\n"
}
