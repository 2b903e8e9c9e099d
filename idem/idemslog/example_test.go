package idemslog_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemslog"
)

func ExampleObserver() {
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == "claim" || a.Key == "func" || a.Key == "finish" {
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: noTime}))
	store := memstore.New(memstore.Options{})
	defer store.Close()
	audit := idemslog.Observer(logger, idemslog.Options{KeySecret: []byte("s3cr3t")})
	eng := idem.New(store, idem.WithObserver(audit))

	fp := idem.FingerprintString("POST", "/payments", `{"amount":100}`)
	charge := func(context.Context) (idem.Response, error) { return idem.Response{Status: 201}, nil }
	_, _ = eng.Do(context.Background(), "order-1", fp, charge)
	_, _ = eng.Do(context.Background(), "order-1", fp, charge)
	// Output:
	// level=INFO msg="idem transition" transition=acquired key_hmac=892a8091d8135b7607980fad2a829b39f6969d296728a86411e49c6a3c7b2538 token=1
	// level=INFO msg="idem transition" transition=completed key_hmac=892a8091d8135b7607980fad2a829b39f6969d296728a86411e49c6a3c7b2538 token=1
	// level=INFO msg="idem transition" transition=replayed key_hmac=892a8091d8135b7607980fad2a829b39f6969d296728a86411e49c6a3c7b2538 token=1 status=completed
}
