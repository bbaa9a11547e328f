package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// obsCache keeps the observers of a histogram's label values, so that a
// handler call, which observes one or two of them, does not hash its
// labels and look them up in the vector each time (as WithLabelValues
// does). The series it holds are never deleted.
type obsCache struct {
	vec *prometheus.HistogramVec
	two bool     // the vector has two labels, else one
	m   sync.Map // [2]string -> prometheus.Observer
}

// get returns the observer of the label values a (and b, for a vector of
// two labels).
func (c *obsCache) get(a, b string) prometheus.Observer {
	key := [2]string{a, b}
	if o, ok := c.m.Load(key); ok {
		return o.(prometheus.Observer)
	}
	var o prometheus.Observer
	if c.two {
		o = c.vec.WithLabelValues(a, b)
	} else {
		o = c.vec.WithLabelValues(a)
	}
	c.m.Store(key, o)
	return o
}
