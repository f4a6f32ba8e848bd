package sim

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
)

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// streams returns the environment and policy random streams for one run,
// derived from the seed and the run's coordinates only.
func streams(seed uint64, coords ...uint64) (env, pol *rand.Rand) {
	h := mix(seed)
	for _, c := range coords {
		h = mix(h ^ c)
	}
	env = rand.New(rand.NewPCG(mix(h^1), mix(h^2)))
	pol = rand.New(rand.NewPCG(mix(h^3), mix(h^4)))
	return env, pol
}

// parallel calls fn(i) for i in [0, n) on up to GOMAXPROCS goroutines and
// returns the first error in index order.
func parallel(n int, fn func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	errs := make([]error, n)
	if workers <= 1 {
		for i := range n {
			errs[i] = fn(i)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= n {
						return
					}
					errs[i] = fn(i)
				}
			}()
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// count adds one to hist[i], growing hist with zeros as needed, and returns
// it: a histogram over time windows whose extent is not known in advance.
func count(hist []int, i int) []int {
	if i >= len(hist) {
		hist = append(hist, make([]int, i+1-len(hist))...)
	}
	hist[i]++
	return hist
}
