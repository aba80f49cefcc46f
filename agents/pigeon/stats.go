package pigeon

// warmup is the number of pods averaged plainly; each later pod enters the demand statistics
// with weight 1/warmup (exponential smoothing).
const warmup = 100

// seenBound is how many pod keys the agent remembers to count each pod once. A pod is counted
// again only if 65536 other pods were seen between two requests for it.
const seenBound = 1 << 16

// demandStats are the smoothed mean vector and second-moment matrix of the demand vectors of
// the pods seen, in the agent's units (not yet normalized by capacity).
type demandStats struct {
	count  int64
	mean   vec
	second mat
}

// add enters the demand x of one more pod: with w = 1/min(count, warmup),
// mean += w (x - mean) and second += w (x x' - second).
func (d *demandStats) add(m int, x *vec) {
	d.count++
	w := 1 / float64(min(d.count, warmup))
	for j := 0; j < m; j++ {
		d.mean[j] += w * (x[j] - d.mean[j])
		for l := 0; l < m; l++ {
			d.second[j][l] += w * (x[j]*x[l] - d.second[j][l])
		}
	}
}

// coefVar returns c(demand): the coefficient of variation of the demand normalized per
// resource by avgCap, the average node capacity, with covariance second - mean mean'. A
// resource of zero average capacity contributes nothing.
func (d *demandStats) coefVar(m int, avgCap *vec) float64 {
	var mu vec
	var cov mat
	for j := 0; j < m; j++ {
		if avgCap[j] > 0 {
			mu[j] = d.mean[j] / avgCap[j]
		}
	}
	for j := 0; j < m; j++ {
		for l := 0; l < m; l++ {
			if avgCap[j] > 0 && avgCap[l] > 0 {
				cov[j][l] = d.second[j][l]/(avgCap[j]*avgCap[l]) - mu[j]*mu[l]
			}
		}
	}
	return coefVar(m, &mu, &cov)
}

// seenSet remembers the most recent bound keys added, in a ring.
type seenSet struct {
	keys  map[string]struct{}
	ring  []string
	next  int
	bound int
}

func newSeenSet(bound int) *seenSet {
	return &seenSet{keys: make(map[string]struct{}), bound: bound}
}

// add records key and reports whether it was new. Past bound keys, the oldest is forgotten.
func (s *seenSet) add(key string) bool {
	if _, ok := s.keys[key]; ok {
		return false
	}
	if len(s.ring) < s.bound {
		s.ring = append(s.ring, key)
	} else {
		delete(s.keys, s.ring[s.next])
		s.ring[s.next] = key
		s.next = (s.next + 1) % s.bound
	}
	s.keys[key] = struct{}{}
	return true
}
