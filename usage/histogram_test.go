package usage

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

func TestBuckets(t *testing.T) {
	// ceil(log(100 * 0.05 / 0.01 + 1) / log(1.05)) + 1 = ceil(127.4) + 1 = 129
	if numBuckets != 129 {
		t.Errorf("numBuckets %d, want 129", numBuckets)
	}
	// start(1) = 0.01; start(2) = 0.01 * (1.05^2 - 1) / 0.05 = 0.0205
	for i, want := range map[int]float64{0: 0, 1: 0.01, 2: 0.0205} {
		if got := bucketStart(i); math.Abs(got-want) > 1e-12 {
			t.Errorf("bucketStart(%d) = %v, want %v", i, got, want)
		}
	}
	for i := range numBuckets {
		s := bucketStart(i)
		if got := bucketOf(s); got != i {
			t.Errorf("bucketOf(start(%d) = %v) = %d", i, s, got)
		}
		if i > 0 {
			if got := bucketOf(math.Nextafter(s, 0)); got != i-1 {
				t.Errorf("bucketOf(just below start(%d)) = %d", i, got)
			}
		}
	}
	for _, v := range []float64{-1, 0, math.NaN(), 0.005} {
		if got := bucketOf(v); got != 0 {
			t.Errorf("bucketOf(%v) = %d, want 0", v, got)
		}
	}
	if got := bucketOf(1e9); got != numBuckets-1 {
		t.Errorf("bucketOf(1e9) = %d, want the last bucket", got)
	}
}

type sample struct {
	v float64
	t time.Time
}

// The histogram's percentile is the end of the bucket holding the exact weighted percentile,
// over random samples spread across many half-lives (so that the reference time moves).
func TestPercentileAgainstExact(t *testing.T) {
	h := time.Hour
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var hg histogram
		var samples []sample
		n := 1 + rng.IntN(300)
		span := time.Duration(rng.Int64N(int64(200 * h)))
		for i := range n {
			at := t0.Add(span * time.Duration(i) / time.Duration(n))
			v := math.Exp(rng.NormFloat64()) // log-normal around 1
			hg.add(v, at, h)
			samples = append(samples, sample{v, at})
		}
		// Not p100, as VPA's (whose pruning may drop the maximum).
		for _, p := range []float64{0.01, 0.5, 0.9, 0.99} {
			exact := safeExact(samples, p, h)
			want := bucketStart(bucketOf(exact) + 1)
			got := hg.percentile(p)
			// Pruning folds the low edge's buckets under 1e-4 of the total up: the answer may move by one
			// bucket where the exact percentile sits at such a sliver.
			if got != want && math.Abs(float64(bucketOf(got)-bucketOf(want))) > 1 {
				t.Fatalf("trial %d (%d samples over %s): p%v = %v, want %v (exact %v)", trial, n, span, p, got, want, exact)
			}
		}
	}
}

// Decay worked by hand: ratio 1 at t0, ratio 3 two half-lives later: weights 1 and 4 (relative to
// t0), so the median is 3's bucket; with ratio 1 again at t0 + 2h the weights are 1+4 against 4.
func TestDecay(t *testing.T) {
	h := time.Hour
	var hg histogram
	hg.add(1, t0, h)
	hg.add(3, t0.Add(2*h), h)
	if got, want := hg.percentile(0.5), bucketStart(bucketOf(3)+1); got != want {
		t.Errorf("median %v, want 3's bucket end %v", got, want)
	}
	// 1/5 of the weight is below 3: p0.19 is in 1's bucket; p0.2, a tie, in 3's (the safe side).
	if got, want := hg.percentile(0.19), bucketStart(bucketOf(1)+1); got != want {
		t.Errorf("p19 %v, want 1's bucket end %v", got, want)
	}
	if got, want := hg.percentile(0.2), bucketStart(bucketOf(3)+1); got != want {
		t.Errorf("p20 %v, want 3's bucket end %v", got, want)
	}
	hg.add(1, t0.Add(2*h), h)
	if got, want := hg.percentile(0.5), bucketStart(bucketOf(1)+1); got != want {
		t.Errorf("median after another 1: %v, want %v", got, want)
	}
	// Far later the reference moves; the old samples fade below the pruning share.
	hg.add(10, t0.Add(100*h), h)
	if got, want := hg.percentile(0.01), bucketStart(bucketOf(10)+1); got != want || hg.lo != bucketOf(10) || len(hg.w) != 1 {
		t.Errorf("after 100 half-lives: p1 %v (want %v), span %d+%d", got, want, hg.lo, len(hg.w))
	}
	// p100 without pruning: the maximum's bucket end.
	var top histogram
	for _, v := range []float64{0.3, 7, 1} {
		top.add(v, t0, h)
	}
	if got, want := top.percentile(1), bucketStart(bucketOf(7)+1); got != want {
		t.Errorf("p100 %v, want %v", got, want)
	}
	var empty histogram
	if empty.percentile(0.9) != 0 || !empty.empty() {
		t.Error("an empty histogram answers 0")
	}
}
