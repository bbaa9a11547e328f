package orderly_test

import (
	"fmt"
	"math"
	"time"

	"github.com/orderlyhq/orderly"
)

// A retry policy maps a job's retry count after a failure (0 after the
// first) to how long it waits; a Worker's RetryIn takes it.
func ExampleLinearRetry() {
	policy := orderly.LinearRetry(10 * time.Second) // base * (retry_count + 1)
	for n := range 4 {
		fmt.Printf("retry_count %d: %s\n", n, policy(n, nil))
	}
	// Output:
	// retry_count 0: 10s
	// retry_count 1: 20s
	// retry_count 2: 30s
	// retry_count 3: 40s
}

func ExampleExponentialRetry() {
	policy := orderly.ExponentialRetry(time.Second, time.Minute) // base * 2^retry_count, at most a minute
	for _, n := range []int{0, 1, 2, 5, 6, 100} {
		fmt.Printf("retry_count %d: %s\n", n, policy(n, nil))
	}
	// Output:
	// retry_count 0: 1s
	// retry_count 1: 2s
	// retry_count 2: 4s
	// retry_count 5: 32s
	// retry_count 6: 1m0s
	// retry_count 100: 1m0s
}

// LowkiqRetry, the default, waits retry_count^4 + 15 + rand(30) *
// (retry_count + 1) seconds: 15 to 44 s before the first retry, and about
// 3.8 days before the 25th, the last one of the default MaxRetryCount.
func ExampleLowkiqRetry() {
	policy := orderly.LowkiqRetry()
	for _, n := range []int{0, 1, 4, 24} {
		base := math.Pow(float64(n), 4) + 15 // the random part adds 0 to 29 * (n+1) s
		low := time.Duration(base) * time.Second
		high := low + time.Duration(29*(n+1))*time.Second
		d := policy(n, nil)
		fmt.Printf("retry_count %d: between %s and %s: %t\n", n, low, high, d >= low && d <= high)
	}
	// Output:
	// retry_count 0: between 15s and 44s: true
	// retry_count 1: between 16s and 1m14s: true
	// retry_count 4: between 4m31s and 6m56s: true
	// retry_count 24: between 92h9m51s and 92h21m56s: true
}
