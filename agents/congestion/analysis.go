package congestion

import "math/bits"

// Score is the congestion score of a node whose congestion factor is factor, M being the factor
// at and above which a node scores 0:
//
//	cf = clamp(factor, 0, M); score = 10 * (1 - cf/M), rounded half up.
//
// It is computed exactly, in integers: score = floor((20*(M - cf) + M) / (2*M)), which is
// floor(10*(M - cf)/M + 1/2), with a 128-bit numerator so that no M overflows. A non-positive M
// scores 0.
func Score(factor, m int64) int64 {
	if m <= 0 {
		return 0
	}
	cf := max(min(factor, m), 0)
	hi, lo := bits.Mul64(20, uint64(m-cf))
	lo, carry := bits.Add64(lo, uint64(m), 0)
	// hi+carry <= 20 < 2*m whenever the numerator exceeds 64 bits, as Div64 requires.
	q, _ := bits.Div64(hi+carry, lo, 2*uint64(m))
	return int64(q)
}
