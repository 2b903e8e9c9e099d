package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemslog"
)

// resolveJSON is what resolve prints.
type resolveJSON struct {
	keyName
	Token    idem.Token `json:"token"`
	Applied  bool       `json:"applied"`
	Resolved bool       `json:"resolved"`
	refusal
}

// responseJSON is the RESPONSE argument of --applied: the response the
// effect produced, replayed byte for byte from then on.
type responseJSON struct {
	Status int                 `json:"status"`
	Header map[string][]string `json:"header,omitempty"`
	Body   string              `json:"body,omitempty"`
}

// parseResponse reads RESPONSE: a JSON object, inline or "@file".
func parseResponse(arg string) (*idem.Response, error) {
	b := []byte(arg)
	if name, ok := strings.CutPrefix(arg, "@"); ok {
		var err error
		if b, err = os.ReadFile(name); err != nil {
			return nil, fmt.Errorf("--applied: %w", err)
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var r responseJSON
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf(`--applied: want {"status":201,"header":{"Location":["/p/7"]},"body":"..."}: %w`, err)
	}
	if r.Status < 200 || r.Status > 599 {
		return nil, fmt.Errorf("--applied: status %d is not in 200..599", r.Status)
	}
	return &idem.Response{Status: r.Status, Header: r.Header, Body: []byte(r.Body)}, nil
}

// resolve is `idemctl resolve KEY --token N (--applied RESPONSE |
// --not-applied)`: it settles an uncertain key through idem.Engine.Resolve,
// fenced by the token, and writes one audit line (idemslog) to stderr.
func resolve(ctx context.Context, e *env, args []string) (int, error) {
	fs := flag.NewFlagSet("resolve", flag.ContinueOnError)
	token := fs.Uint64("token", 0, "")
	appliedArg := fs.String("applied", "", "")
	notApplied := fs.Bool("not-applied", false, "")
	retention := fs.Duration("retention", idem.DefaultRetention, "")
	pos, err := subFlags(fs, args)
	if err != nil || len(pos) != 1 || *token == 0 || (*appliedArg == "") == !*notApplied || *retention <= 0 {
		return usageError(err, usageResolve)
	}
	var applied *idem.Response
	if *appliedArg != "" {
		if applied, err = parseResponse(*appliedArg); err != nil {
			return exitUsage, err
		}
	}
	name, err := e.storageKey(pos[0])
	if err != nil {
		return exitUsage, err
	}
	res := resolveJSON{keyName: name, Token: idem.Token(*token), Applied: applied != nil}
	refuse := func(reason string, rec *idem.Record) (int, error) { return res.refuse(e, &res, reason, rec) }
	rec, err := e.store.Get(ctx, name.Stored)
	if err != nil {
		return storeErr(err)
	}
	if rec.Status != idem.StatusUncertain || rec.Token != res.Token {
		return refuse(fmt.Sprintf("%s is %s with token %d, not uncertain with token %d", name, rec.Status, rec.Token, res.Token), rec)
	}
	audit := idemslog.Observer(slog.New(slog.NewJSONHandler(e.stderr, nil)), idemslog.Options{Message: "idemctl resolve"})
	eng := idem.New(e.store, idem.WithRetention(*retention), idem.WithObserver(audit))
	err = eng.Resolve(ctx, name.Stored, res.Token, applied)
	switch {
	case errors.Is(err, idem.ErrNoUncertainStore):
		return exitBackend, errors.New("the store cannot record uncertain outcomes")
	case errors.Is(err, idem.ErrNotUncertain):
		cur, _ := e.store.Get(ctx, name.Stored)
		return refuse(fmt.Sprintf("%s is no longer uncertain with token %d", name, res.Token), cur)
	case err != nil:
		return storeErr(err)
	}
	res.Resolved = true
	if applied != nil {
		e.out.print(res, fmt.Sprintf("resolved %s (token %d) as applied: requests with this key now get status %d replayed",
			name, res.Token, applied.Status))
	} else {
		e.out.print(res, fmt.Sprintf("resolved %s (token %d) as not applied: the next request with this key runs as new",
			name, res.Token))
	}
	return exitOK, nil
}
