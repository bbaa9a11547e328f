package redisstore

// SetAfterOutboxRead makes RelayOutbox call f between reading the outbox
// and relaying what it read, to interleave relays. Call it before the store
// is used.
func SetAfterOutboxRead(s *Store, f func()) { s.afterOutboxRead = f }
