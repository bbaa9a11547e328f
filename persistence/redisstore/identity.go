package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// StoreID returns the store's identity (persistence.Identifier): a random
// id kept in the key P:store_id, created once with SET NX, so that every
// node of the store reads the same one. It is a global key of its own
// (docs/storage.md), never touched by a script.
func (s *Store) StoreID(ctx context.Context) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("redisstore: store id: %w", err)
	}
	key := s.keys.storeID()
	if _, err := s.rdb.SetNX(ctx, key, hex.EncodeToString(b), 0).Result(); err != nil {
		return "", fmt.Errorf("redisstore: store id: %w", err)
	}
	id, err := s.rdb.Get(ctx, key).Result()
	if err != nil {
		return "", fmt.Errorf("redisstore: store id: %w", err)
	}
	return id, nil
}
