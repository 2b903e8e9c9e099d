package main

import (
	"net/http"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// flawRawBytes fingerprints the body byte for byte, so a retry whose JSON
// members come in another order (or with other whitespace) is refused
// with 422 although it is the same request. idembench's fingerprint
// fuzzer (idembench http --fuzz-fingerprint N) must catch it; with
// body-blind-fingerprint (a fingerprint that ignores the body, so a
// different request is answered with the first one's answer) it is one of
// the two fingerprint-scope flaws the fuzzer is measured on.
const flawRawBytes = "raw-bytes-fingerprint"

func init() {
	flaws[flawRawBytes] = func(eng *idem.Engine, opts idemhttp.Options, _ chargeFunc) func(http.Handler) http.Handler {
		opts.Fingerprint = idemhttp.NewFingerprinter(idemhttp.FingerprintOptions{RawJSON: true})
		return idemhttp.Middleware(eng, opts)
	}
}
