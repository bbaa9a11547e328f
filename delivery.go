package orderly

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadDelivery is returned by ParseDelivery for a string that is not a
// delivery name.
var ErrBadDelivery = errors.New("orderly: not a delivery name")

// Delivery is a parsed delivery name, "<queue>/<shard>/<epoch>/<seq>": the
// value of Batch.Delivery and of a webhook request's Orderly-Delivery header.
//
// Epoch is the fencing epoch of the shard's lease under which the call was
// made; it only grows (docs/contract.md §2.5). A downstream system that must
// never apply an old owner's late write keeps, per id, the highest epoch it
// accepted and rejects writes of a lower one (see the example). Seq counts
// the owner's deliveries; a retry or a redelivery gets a new one.
type Delivery struct {
	Queue string
	Shard int
	Epoch int64
	Seq   int64
}

// ParseDelivery parses a delivery name. The queue name may itself contain
// '/': the last three fields are the shard, the epoch and the seq.
func ParseDelivery(name string) (Delivery, error) {
	bad := func() (Delivery, error) {
		return Delivery{}, fmt.Errorf("%w: %q", ErrBadDelivery, name)
	}
	rest, seq, ok1 := cutLast(name)
	rest, epoch, ok2 := cutLast(rest)
	queue, shard, ok3 := cutLast(rest)
	if !ok1 || !ok2 || !ok3 || queue == "" {
		return bad()
	}
	var d Delivery
	var err error
	d.Queue = queue
	if d.Shard, err = strconv.Atoi(shard); err != nil || d.Shard < 0 {
		return bad()
	}
	if d.Epoch, err = strconv.ParseInt(epoch, 10, 64); err != nil || d.Epoch < 0 {
		return bad()
	}
	if d.Seq, err = strconv.ParseInt(seq, 10, 64); err != nil || d.Seq < 0 {
		return bad()
	}
	return d, nil
}

// String returns the delivery name.
func (d Delivery) String() string {
	return d.Queue + "/" + strconv.Itoa(d.Shard) + "/" + strconv.FormatInt(d.Epoch, 10) + "/" + strconv.FormatInt(d.Seq, 10)
}

func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}
