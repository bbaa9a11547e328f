package orderly

import (
	"math"
	"math/rand/v2"
	"time"
)

// RetryPolicy returns how long a job waits before its next attempt, given its
// retry count after the failure (0 after the first failure) and the error
// its handler returned for it (the whole call's, or the id's in a
// PartialFailure; nil when it failed for another reason, such as a state
// write over the limit). It may branch on the error (errors.Is, errors.As)
// to wait longer for some. Errors built with Snooze, Dead and Discard never
// reach it: they choose the id's fate themselves.
type RetryPolicy func(retryCount int, err error) time.Duration

// MaxRetryWait caps every built-in policy, so that a large retry count never
// overflows into a negative (immediate) retry.
const MaxRetryWait = 365 * 24 * time.Hour

func capWait(seconds float64) time.Duration {
	if seconds >= MaxRetryWait.Seconds() || seconds != seconds {
		return MaxRetryWait
	}
	return time.Duration(seconds * float64(time.Second))
}

// LowkiqRetry is Lowkiq's policy and the default: retry_count^4 + 15 +
// rand(30) * (retry_count + 1) seconds, roughly 15 s, 16 s, 31 s, 96 s, 271 s,
// and about 3.8 days before the 25th retry (retry_count 24), the last of
// DefaultMaxRetryCount.
func LowkiqRetry() RetryPolicy {
	return func(n int, _ error) time.Duration {
		n = max(n, 0)
		return capWait(math.Pow(float64(n), 4) + 15 + float64(rand.IntN(30))*float64(n+1))
	}
}

// LinearRetry waits base * (retry_count + 1).
func LinearRetry(base time.Duration) RetryPolicy {
	return func(n int, _ error) time.Duration {
		return capWait(base.Seconds() * float64(max(n, 0)+1))
	}
}

// ExponentialRetry waits base * 2^retry_count, at most maxWait.
func ExponentialRetry(base, maxWait time.Duration) RetryPolicy {
	return func(n int, _ error) time.Duration {
		n = max(n, 0)
		if n >= 62 {
			return min(maxWait, MaxRetryWait)
		}
		d := base << uint(n)
		if d <= 0 || d > maxWait || d/base != 1<<uint(n) {
			return min(maxWait, MaxRetryWait)
		}
		return min(d, MaxRetryWait)
	}
}
