package safe

import (
	"runtime"
	"sync"
)

// minChunk is the fewest nodes worth a goroutine of their own: their work is two orders of
// magnitude above the cost of starting and joining a goroutine (docs/results/performance-history.md,
// "Chunks of the safe agent").
const minChunk = 256

// forChunks calls fn on consecutive ranges [lo, hi) covering [0, n): on up to GOMAXPROCS
// goroutines at once when n is large, else on the caller's. A filter or priority call sits in
// the pod's scheduling cycle: with the cores the extender is given, its latency shrinks. fn must
// only write state owned by its range. A panic in fn is raised again on the caller's goroutine,
// where the server's recovery turns it into a 500 rather than a crash.
func forChunks(n int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n/minChunk)
	if workers <= 1 {
		fn(0, n)
		return
	}
	size := (n + workers - 1) / workers
	var (
		wg       sync.WaitGroup
		once     sync.Once
		panicked any
	)
	for lo := 0; lo < n; lo += size {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					once.Do(func() { panicked = p })
				}
			}()
			fn(lo, min(lo+size, n))
		})
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}
