package orderly_test

import (
	"fmt"

	"github.com/orderlyhq/orderly"
)

// Fencing on the epoch: a downstream store keeps, per id, the delivery
// (epoch, seq) whose write it accepted, and rejects a write made under an
// older one. So a node that was frozen while its shard moved to another
// node, and whose handler call resumes afterwards, cannot overwrite what the
// new owner wrote; nor can an attempt the owner gave up on and retried
// overwrite its retry. In a Go handler the delivery name is Batch.Delivery;
// a webhook receiver reads the Orderly-Delivery header.
func ExampleParseDelivery() {
	type account struct {
		balance int
		epoch   int64 // the delivery whose write set balance: its epoch
		seq     int64 // and its seq
	}
	accounts := map[string]account{}
	// apply is the downstream write, as in SQL:
	//   UPDATE accounts SET balance = :b, epoch = :e, seq = :s
	//    WHERE id = :id AND (epoch < :e OR (epoch = :e AND seq <= :s))
	apply := func(delivery, id string, balance int) bool {
		d, err := orderly.ParseDelivery(delivery)
		if err != nil {
			return false
		}
		if a, ok := accounts[id]; ok && (d.Epoch < a.epoch || d.Epoch == a.epoch && d.Seq < a.seq) {
			return false // an older delivery's late write
		}
		accounts[id] = account{balance: balance, epoch: d.Epoch, seq: d.Seq}
		return true
	}

	fmt.Println(apply("orders/3/1795675071161/7", "acct-1", 100)) // the shard's owner
	fmt.Println(apply("orders/3/1795675071161/8", "acct-1", 110)) // its retry of the id
	fmt.Println(apply("orders/3/1795675071161/7", "acct-1", 105)) // the given-up attempt, late
	fmt.Println(apply("orders/3/1795675075002/1", "acct-1", 120)) // its next owner, after a failover
	fmt.Println(apply("orders/3/1795675071161/9", "acct-1", 90))  // the old owner, resumed after a pause
	fmt.Println(accounts["acct-1"].balance)
	// Output:
	// true
	// true
	// false
	// true
	// false
	// 120
}
