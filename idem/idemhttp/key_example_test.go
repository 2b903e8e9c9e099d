package idemhttp_test

import (
	"fmt"

	"github.com/idembench/idembench/idem/idemhttp"
)

func ExampleParseKey() {
	for _, v := range []string{`"8e03978e"`, `8e03978e`, `"a\"b"`, `"a", "b"`, `"a";v=1`} {
		key, err := idemhttp.ParseKey(v)
		fmt.Printf("%-12s -> %q %v\n", v, key, err)
	}
	// Output:
	// "8e03978e"   -> "8e03978e" <nil>
	// 8e03978e     -> "8e03978e" <nil>
	// "a\"b"       -> "a\"b" <nil>
	// "a", "b"     -> "" idemhttp: Idempotency-Key is not a structured-field string: a list after the string
	// "a";v=1      -> "" idemhttp: Idempotency-Key is not a structured-field string: parameters after the string
}
