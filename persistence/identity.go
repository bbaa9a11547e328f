package persistence

import "context"

// Identifier is a store's identity, part of NodeStore: nodes put it in
// their cluster metadata and ignore members of another store, so that a
// node pointed at another Redis cannot take shards it would serve there.
type Identifier interface {
	// StoreID returns the store's identity, created on the first call
	// and the same for every node of the store afterwards; "" for a store
	// that cannot tell (every member is then taken as the same store).
	StoreID(ctx context.Context) (string, error)
}
