package naive

import "github.com/idembench/idembench/idem"

// Corrupt breaks the stored record of key in st, a design of this package,
// so that reads report idem.ErrCorruptRecord. It reports whether it did: st
// is a design and key had a record. The external tests (conformance_test.go,
// package naive_test, which imports storetest, which imports this package)
// reach the unexported corrupt through it.
func Corrupt(st idem.Store, key string) bool {
	c, ok := st.(interface{ corrupt(string) bool })
	return ok && c.corrupt(key)
}
