package ownstore

import (
	"context"
	"fmt"
)

// CorruptForTest overwrites the stored response of key with bytes that do
// not decode, for the conformance suite's corrupt-record case.
func CorruptForTest(ctx context.Context, s *Store, key string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE ownstore_keys SET response = 'not a response' WHERE k = ?`, key)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("corrupt %q: %d rows", key, n)
	}
	return nil
}
