package main

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Estimates is how well what a scheduler could know of a pod before it runs predicts what the
// pod then uses (cpu and memory), over the pods arriving after the warm-up: the medians of
// |log(used/request)| and of |log(used/history)|, where used is the pod's mean usage over its
// run and history is the mean usage/request, observed so far, of its workload's pods that
// arrived before it (each pod's usage from its arrival to its end or to the new pod's
// arrival, whichever comes first, at least a minute of it), times the pod's request. History
// medians are over the pods that have one (WithHistory); RequestOnHistory is the median of
// |log(used/request)| over those same pods, for a like-for-like comparison.
type Estimates struct {
	Pods, WithHistory int
	// CPUUsedShare and MemUsedShare are the pods' usage over their requests, all pods pooled
	// (sum of mean usage over sum of requests): the share of the requested load that is used.
	CPUUsedShare, MemUsedShare         float64
	CPURequest, CPUHistory, CPUReqSame float64
	MemRequest, MemHistory, MemReqSame float64
}

// Estimate computes the Estimates of workload w under model m and seed, each pod running
// from its arrival for its run time (cut at duration): the usage the lab serves for it.
func Estimate(w Workload, m Model, seed uint64, duration, warmup time.Duration) Estimates {
	type pod struct {
		p *PodPlan
		// Cumulative usage/request per simulated minute of its run (cpu, memory).
		cpu, mem []float64
	}
	byWorkload := map[string][]*pod{}
	var order []string
	for i := range w.Pods {
		p := &w.Pods[i]
		end := min(p.Arrive+p.Duration, duration)
		pd := &pod{p: p, cpu: []float64{0}, mem: []float64{0}}
		for t := p.Arrive; t < end; t += time.Minute {
			c, mm := m.Usage(seed, p, t)
			pd.cpu = append(pd.cpu, pd.cpu[len(pd.cpu)-1]+c/float64(p.CPU))
			pd.mem = append(pd.mem, pd.mem[len(pd.mem)-1]+mm/float64(p.Memory))
		}
		if byWorkload[p.Workload] == nil {
			order = append(order, p.Workload)
		}
		byWorkload[p.Workload] = append(byWorkload[p.Workload], pd)
	}
	var e Estimates
	var sumC, sumCR, sumM, sumMR float64
	var cReq, cHist, cSame, mReq, mHist, mSame []float64
	for _, name := range order {
		pods := byWorkload[name]
		sort.SliceStable(pods, func(i, j int) bool { return pods[i].p.Arrive < pods[j].p.Arrive })
		for i, pd := range pods {
			n := len(pd.cpu) - 1
			if pd.p.Arrive < warmup || n == 0 {
				continue
			}
			e.Pods++
			usedC, usedM := pd.cpu[n]/float64(n), pd.mem[n]/float64(n)
			sumC, sumCR = sumC+usedC*float64(pd.p.CPU), sumCR+float64(pd.p.CPU)
			sumM, sumMR = sumM+usedM*float64(pd.p.Memory), sumMR+float64(pd.p.Memory)
			lc, lm := absLog(usedC), absLog(usedM)
			cReq, mReq = append(cReq, lc), append(mReq, lm)
			hc, hm, k := 0.0, 0.0, 0
			for _, q := range pods[:i] {
				seen := min(int((pd.p.Arrive-q.p.Arrive)/time.Minute), len(q.cpu)-1)
				if seen < 1 {
					continue
				}
				hc += q.cpu[seen] / float64(seen)
				hm += q.mem[seen] / float64(seen)
				k++
			}
			if k == 0 {
				continue
			}
			e.WithHistory++
			cHist, mHist = append(cHist, absLog(usedC/(hc/float64(k)))), append(mHist, absLog(usedM/(hm/float64(k))))
			cSame, mSame = append(cSame, lc), append(mSame, lm)
		}
	}
	if sumCR > 0 {
		e.CPUUsedShare, e.MemUsedShare = sumC/sumCR, sumM/sumMR
	}
	e.CPURequest, e.CPUHistory, e.CPUReqSame = median(cReq), median(cHist), median(cSame)
	e.MemRequest, e.MemHistory, e.MemReqSame = median(mReq), median(mHist), median(mSame)
	return e
}

// absLog is |log x|, with x below 1e-6 taken as 1e-6 (a pod that used nothing).
func absLog(x float64) float64 { return math.Abs(math.Log(math.Max(x, 1e-6))) }

// estimatesTable is the markdown table of the estimates of each workload and seed.
func estimatesTable(rows []EstimateRow) string {
	if len(rows) == 0 {
		return ""
	}
	s := "How well what a scheduler could know before a pod ran predicts what it then used (pods arriving after the warm-up; " +
		"|log| of used over the estimate: 0.1 is about 10 % off, 0.69 a factor of 2; docs/quality.md, \"Estimate quality\"):\n\n" +
		"| usage | workload | seed | pods | with history | cpu used/requested | memory used/requested | cpu: request | cpu: request, pods with history | cpu: workload history | memory: request | memory: request, pods with history | memory: workload history |\n" +
		"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
	for _, r := range rows {
		e := r.Estimates
		s += fmt.Sprintf("| %s | %s | %d | %d | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", r.Usage, r.Workload, r.Seed,
			e.Pods, e.WithHistory, e.CPUUsedShare, e.MemUsedShare, e.CPURequest, e.CPUReqSame, e.CPUHistory, e.MemRequest, e.MemReqSame, e.MemHistory)
	}
	return s + "\n"
}

// EstimateRow is the estimates of one workload and seed.
type EstimateRow struct {
	Usage, Workload string
	Seed            uint64
	Estimates       Estimates
}
