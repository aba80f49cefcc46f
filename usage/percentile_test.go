package usage

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Upper percentiles on the safe side (low is the unsafe direction for placement): over dense,
// bimodal and tied streams, the learner's percentile, in memory and as stored, is never below
// the exact weighted percentile the test computes from the samples; in memory it is the end of
// the exact percentile's bucket, stored at most one bucket more (the store's rounding moves
// weight up).

// safeExact is the exact weighted percentile of samples, weight 2^((t - last) / h): the
// smallest value whose cumulative weight exceeds p of the total; a tie (a cumulative weight of
// exactly p of the total, to 1e-9) goes to the next value, the safe side.
func safeExact(samples []sample, p float64, h time.Duration) float64 {
	s := slices.Clone(samples)
	slices.SortStableFunc(s, func(a, b sample) int { return cmp.Compare(a.v, b.v) })
	last := samples[len(samples)-1].t
	weight := func(x sample) float64 { return math.Exp2(float64(x.t.Sub(last)) / float64(h)) }
	total := 0.0
	for _, x := range s {
		total += weight(x)
	}
	sum := 0.0
	for i, x := range s {
		sum += weight(x)
		if sum >= p*total*(1+1e-9) && (i+1 == len(s) || s[i+1].v != x.v) {
			return x.v
		}
	}
	return s[len(s)-1].v
}

// stored is hg written to its record and read back, as a reader of the store sees it.
func stored(t *testing.T, hg *histogram, h time.Duration) histogram {
	t.Helper()
	b, err := json.Marshal(encodeHist(hg, h))
	if err != nil {
		t.Fatal(err)
	}
	var r *histRecord
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	back, err := r.decode("cpu")
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// checkSafe compares the percentiles of hg, in memory and stored, with the exact ones.
func checkSafe(t *testing.T, name string, hg *histogram, samples []sample, h time.Duration, ps []float64) {
	t.Helper()
	back := stored(t, hg, h)
	for _, p := range ps {
		exact := safeExact(samples, p, h)
		for _, c := range []struct {
			where string
			got   float64
			slack int // buckets above the exact one's
		}{{"in memory", hg.percentile(p), 1}, {"stored", back.percentile(p), 2}} {
			end := bucketStart(min(bucketOf(exact)+c.slack, numBuckets-1))
			if c.got < exact || c.got > end {
				t.Errorf("%s: p%g %s = %.4g (bucket %d), exact %.4g (bucket %d, end %.4g): %d buckets %s",
					name, p*100, c.where, c.got, bucketOf(c.got)-1, exact, bucketOf(exact), end,
					abs(bucketOf(c.got)-1-bucketOf(exact)), map[bool]string{true: "low", false: "high"}[c.got < exact])
			}
		}
	}
}

func abs(i int) int { return max(i, -i) }

// stream feeds a seed sample at t0 (so that the reference time is t0), then from `from` on one
// sample every step, drawn by draw, checking at the given sample counts (of the stream): the
// reference moves at the first sample more than maxDecayExponent half-lives after t0, with a
// histogram full of the stream's recent samples.
func stream(t *testing.T, name string, from time.Duration, n int, step, h time.Duration, draw func() float64, checks []int, ps []float64) {
	var hg histogram
	samples := []sample{{1, t0}}
	hg.add(1, t0, h)
	next := 0
	for i := range n {
		at := t0.Add(from + time.Duration(i)*step)
		v := draw()
		before := hg.ref
		hg.add(v, at, h)
		samples = append(samples, sample{v, at})
		if next < len(checks) && i+1 == checks[next] {
			next++
			checkSafe(t, fmt.Sprintf("%s after %d samples (reference moved %v)", name, i+1, !hg.ref.Equal(before)), &hg, samples, h, ps)
		}
	}
}

// shiftAt is the count of samples, one every step from `from`, after which the reference
// moves: the first sample more than maxDecayExponent half-lives after t0.
func shiftAt(from, step, h time.Duration) int {
	return int((time.Duration(maxDecayExponent)*h-from)/step) + 2
}

// A dense bimodal workload, as the lab saw it: modes 0.16 and 8.05, 5 % high, about 30,000
// effective samples (a half-life of 10,400 samples: N_eff = 2 h / (step ln 2)). Its p95 sits
// where the cumulative weight is flat, between the modes: dropping the upper edge's slivers
// when the reference moves would move it down by buckets.
func TestPercentileSafeBimodal(t *testing.T) {
	h, step := time.Hour, time.Hour/10400
	rng := rand.New(rand.NewPCG(51, 1))
	draw := func() float64 {
		if rng.Float64() < 0.05 {
			return 8.05 * math.Exp(0.6*rng.NormFloat64())
		}
		return 0.16 * math.Exp(0.6*rng.NormFloat64())
	}
	from := time.Duration(maxDecayExponent-3) * h // three half-lives of samples when the reference moves
	s := shiftAt(from, step, h)
	stream(t, "bimodal", from, s+10400, step, h, draw, []int{s, s + 1000, s + 10400}, []float64{0.9, 0.95, 0.99})
}

// A dense unimodal workload with rare spikes (1 in 2,000 samples at 20x to 60x): the spikes
// make the upper edge's slivers. Percentiles just above each bucket boundary's cumulative
// share are asked, where a lost sliver of the total reads one bucket low.
func TestPercentileSafeDense(t *testing.T) {
	h, step := time.Hour, time.Hour/2000
	rng := rand.New(rand.NewPCG(51, 2))
	draw := func() float64 {
		if rng.IntN(2000) == 0 {
			return 20 + 40*rng.Float64()
		}
		return math.Exp(0.3 * rng.NormFloat64())
	}
	var hg histogram
	samples := []sample{{1, t0}}
	hg.add(1, t0, h)
	from := time.Duration(maxDecayExponent-5) * h
	for i := range shiftAt(from, step, h) {
		at := t0.Add(from + time.Duration(i)*step)
		v := draw()
		hg.add(v, at, h)
		samples = append(samples, sample{v, at})
	}
	if !hg.ref.After(t0) {
		t.Fatal("the reference did not move")
	}
	// The exact cumulative share at every bucket boundary from p90 up, plus 1e-7.
	last := samples[len(samples)-1].t
	perBucket := map[int]float64{}
	total := 0.0
	for _, x := range samples {
		w := math.Exp2(float64(x.t.Sub(last)) / float64(h))
		perBucket[bucketOf(x.v)] += w
		total += w
	}
	var ps []float64
	cum := 0.0
	for b := range numBuckets {
		cum += perBucket[b]
		if share := cum / total; share >= 0.9 && share < 0.9999 && perBucket[b] > 0 {
			ps = append(ps, share+1e-7)
		}
	}
	if len(ps) < 5 {
		t.Fatalf("only %d boundaries above p90", len(ps))
	}
	checkSafe(t, "dense", &hg, samples, h, ps)
}

// Tied streams: the cumulative weight is p of the total at a bucket's end, exactly (all samples
// at one time, equal weights) or but for the high samples' being a second newer (weight
// 2^(1/3600) each), and the next value is far above. The tie goes up in memory; the store's
// rounding (the high bucket's weight 10.103 of 1000 rounded to 10.1) must not flip either down.
func TestPercentileSafeTied(t *testing.T) {
	h := time.Hour
	for _, c := range []struct {
		low, high float64
		nLow      int // of 100 samples
		p         float64
		later     time.Duration // the high samples' lead
	}{
		{1, 5, 99, 0.99, 0},
		{1, 5, 99, 0.99, time.Second},
		{0.5, 0.8, 99, 0.99, time.Second}, // 7 buckets apart
		{1, 3, 95, 0.95, 0},
		{0.2, 9, 90, 0.9, 0},
	} {
		var hg histogram
		var samples []sample
		for i := range 100 {
			v, at := c.high, t0.Add(c.later)
			if i < c.nLow {
				v, at = c.low, t0
			}
			hg.add(v, at, h)
			samples = append(samples, sample{v, at})
		}
		name := fmt.Sprintf("%d of 100 at %v, the rest at %v %v later", c.nLow, c.low, c.high, c.later)
		checkSafe(t, name, &hg, samples, h, []float64{c.p})
	}
}
