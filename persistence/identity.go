package persistence

import "context"

// Identifier is implemented by stores that know their identity: nodes put
// it in their cluster metadata and ignore members of another store, so that
// a node pointed at another Redis cannot take shards it would serve there.
type Identifier interface {
	// StoreID returns the store's identity, created on the first call
	// and the same for every node of the store afterwards.
	StoreID(ctx context.Context) (string, error)
}
