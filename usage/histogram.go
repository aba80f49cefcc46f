package usage

import (
	"math"
	"time"
)

// The buckets of every histogram, following VPA's exponential histograms
// (pkg/recommender/util/histogram_options.go), over the ratio usage/request: bucket i holds
// [start(i), start(i+1)) with
//
//	start(i) = firstBucket * (bucketRatio^i - 1) / (bucketRatio - 1)
//
// so the first bucket is 0.01 wide and each next one 5 % wider; the last bucket, from about 100x
// the request up, has no end. A percentile is read at the end of its bucket: at most 5 % above the
// exact value (for ratios above about 0.2; below, 0.01 above it).
const (
	firstBucket = 0.01
	bucketRatio = 1.05
	maxRatio    = 100.0
)

// numBuckets = ceil(log_ratio(maxRatio * (ratio - 1) / firstBucket + 1)) + 1, as VPA's.
var numBuckets = int(math.Ceil(math.Log(maxRatio*(bucketRatio-1)/firstBucket+1)/math.Log(bucketRatio))) + 1

// bucketStart is the start of bucket i (0 for the first).
func bucketStart(i int) float64 {
	if i <= 0 {
		return 0
	}
	return firstBucket * (math.Pow(bucketRatio, float64(i)) - 1) / (bucketRatio - 1)
}

// bucketOf is the bucket holding v, the inverse of bucketStart:
// floor(log_ratio(v * (ratio - 1) / firstBucket + 1)), within [0, numBuckets).
func bucketOf(v float64) int {
	if !(v >= firstBucket) { // also NaN
		return 0
	}
	i := int(math.Log(v*(bucketRatio-1)/firstBucket+1) / math.Log(bucketRatio))
	// Guard the floating-point edge: v exactly at a bucket's start belongs to it.
	if i+1 < numBuckets && v >= bucketStart(i+1) {
		i++
	}
	if i > 0 && v < bucketStart(i) {
		i--
	}
	return min(i, numBuckets-1)
}

// maxDecayExponent bounds how far, in half-lives, a sample may lie after the reference time
// before the reference moves (as VPA's decaying histogram): weights stay below 2^maxDecayExponent.
const maxDecayExponent = 50

// pruneBelow: after a reference shift, the low edge's buckets holding less than this share of
// the total weight are folded into the first bucket kept, so that a histogram's span follows
// the recent samples without losing their mass (VPA's epsilon drops it).
const pruneBelow = 1e-4

// tieSlack: a cumulative weight within this relative distance of a percentile's threshold is a
// tie, read on the safe (high) side, whatever the order of the floating-point sums.
const tieSlack = 1e-9

// histogram is a decaying histogram of ratios (VPA's decayingHistogram): a sample at time t
// weighs 2^((t - ref) / halfLife) against the reference time ref, so that an older sample
// counts half as much as one a half-life newer, without touching stored weights as time passes.
// Only the span of buckets [lo, lo+len(w)) holding weight is kept.
type histogram struct {
	ref   time.Time
	lo    int
	w     []float64
	total float64
}

// add records ratio v at time at, with half-life h.
func (hg *histogram) add(v float64, at time.Time, h time.Duration) {
	if hg.total == 0 {
		*hg = histogram{ref: at.Truncate(h)}
	}
	shifted := at.Sub(hg.ref) > time.Duration(maxDecayExponent)*h
	if shifted {
		hg.shift(at.Truncate(h), h)
	}
	weight := math.Exp2(float64(at.Sub(hg.ref)) / float64(h))
	i := bucketOf(v)
	switch {
	case len(hg.w) == 0:
		hg.lo, hg.w = i, []float64{0}
	case i < hg.lo:
		hg.w = append(make([]float64, hg.lo-i, hg.lo-i+len(hg.w)), hg.w...)
		hg.lo = i
	case i >= hg.lo+len(hg.w):
		hg.w = append(hg.w, make([]float64, i-hg.lo-len(hg.w)+1)...)
	}
	hg.w[i-hg.lo] += weight
	hg.total += weight
	if shifted {
		hg.prune()
	}
}

// shift moves the reference time to ref, scaling every weight by 2^((old - ref) / h).
func (hg *histogram) shift(ref time.Time, h time.Duration) {
	f := math.Exp2(float64(hg.ref.Sub(ref)) / float64(h))
	hg.total = 0
	for i := range hg.w {
		hg.w[i] *= f
		hg.total += hg.w[i]
	}
	hg.ref = ref
}

// prune folds the low edge's buckets holding a negligible share of the weight into the first
// bucket kept, and drops the high edge's buckets left with no weight at all (a weight that
// decayed to nothing). The mass stays: a percentile never reads lower for a prune (the low
// edge's mass moves up; the high edge's is kept, since dropping even a sliver of it lowers a
// percentile whose cumulative weight is flat there, such as p95 between the modes of a
// workload that is 5 % of the time high).
func (hg *histogram) prune() {
	eps := hg.total * pruneBelow
	a, b := 0, len(hg.w)
	for b > 0 && hg.w[b-1] == 0 {
		b--
	}
	folded := 0.0
	for a < b-1 && hg.w[a] <= eps {
		folded += hg.w[a]
		a++
	}
	if a == b {
		*hg = histogram{}
		return
	}
	if a > 0 || b < len(hg.w) {
		w := append([]float64(nil), hg.w[a:b]...)
		w[0] += folded
		hg.total = 0
		for _, x := range w {
			hg.total += x
		}
		hg.w = w
		hg.lo += a
	}
}

// percentile returns the end of the bucket where the cumulative weight first reaches p of the
// total (the start of the last bucket, which has no end), as VPA's, a tie (tieSlack) going to
// the next bucket holding weight; 0 when empty.
func (hg *histogram) percentile(p float64) float64 {
	if hg.total <= 0 {
		return 0
	}
	threshold, sum := p*hg.total*(1+tieSlack), 0.0
	i := 0
	for ; i < len(hg.w)-1; i++ {
		sum += hg.w[i]
		if sum >= threshold {
			break
		}
	}
	b := hg.lo + i
	if b < numBuckets-1 {
		return bucketStart(b + 1)
	}
	return bucketStart(b)
}

// empty reports a histogram with no weight.
func (hg *histogram) empty() bool { return hg.total <= 0 }
