package redisstore

import "testing"

func TestStore(t *testing.T) {
	t.Parallel()
	client := newClient(t)
	storeSuite(t, func(t *testing.T) *Store { return newStore(t, client, Options{}) })
}
