package wire

import "encoding/json"

// Lease is a lease of a pull queue as the HTTP API's pull routes send it
// (docs/contract.md §6.6): its id, its deadline in unix seconds, and its
// jobs in a Request's shape.
type Lease struct {
	ID       string  `json:"lease"`
	Deadline float64 `json:"deadline"`
	Jobs     []Job   `json:"jobs"`
}

// leaseJSON is a lease as encoding/json decodes it.
type leaseJSON struct {
	ID       string    `json:"lease"`
	Deadline float64   `json:"deadline"`
	Jobs     []jobJSON `json:"jobs"`
}

// lease converts a decoded lease.
func (v *leaseJSON) lease() (*Lease, error) {
	jobs, err := jobsOf(v.Jobs)
	if err != nil {
		return nil, err
	}
	return &Lease{ID: v.ID, Deadline: v.Deadline, Jobs: jobs}, nil
}

// UnmarshalLease decodes b, the body of a pull's 200 answer, in one pass
// of encoding/json; with next, b is instead the body of an answer's 200
// answer, whose "next" member holds the lease (nil, nil when it is null or
// absent). The lease is what json.Unmarshal decodes into a *Lease (each job
// as Job.UnmarshalJSON decodes it), without the second pass over every job
// that a Job in a struct costs. A body with one "jobs" member (as the node
// sends) that json.Unmarshal refuses is refused too, but the error may
// differ from json.Unmarshal's: decode it again with json.Unmarshal for
// the error to show.
func UnmarshalLease(b []byte, next bool) (*Lease, error) {
	if next {
		var v struct {
			Next *leaseJSON `json:"next"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
		if v.Next == nil {
			return nil, nil
		}
		return v.Next.lease()
	}
	var v leaseJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v.lease()
}
