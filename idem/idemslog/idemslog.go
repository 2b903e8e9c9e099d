// Package idemslog writes an audit log of the idempotency engine with
// log/slog: one line per transition an idem.Observer is told about
// (acquired, taken over, replayed, completed, released, lease lost, ...),
// with the key, the fencing tokens, the durations and the error.
//
// Keys can be sensitive (they often embed customer or payment ids). With
// Options.KeySecret the raw key never reaches the log: the line carries
// key_hmac, the HMAC-SHA256 of the key under that secret, and every
// occurrence of the key in the error text is replaced by it. An operator
// who has the secret and a suspect key computes KeyDigest and searches the
// logs for it; nobody who reads the logs learns keys.
//
//	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
//	eng := idem.New(store, idem.WithObserver(idemslog.Observer(logger, idemslog.Options{KeySecret: secret})))
//
// The package uses the standard library only.
package idemslog

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strconv"
	"strings"

	"github.com/idembench/idembench/idem"
)

// DefaultMessage is the message of every audit line unless Options.Message
// says otherwise.
const DefaultMessage = "idem transition"

// Options configures Observer. The zero value logs raw keys at Info.
type Options struct {
	// KeySecret, when non-empty, replaces the key by its HMAC-SHA256 under
	// this secret (attribute key_hmac, lowercase hex) and redacts the key
	// from error texts. Keep it as secret as the keys themselves: with it,
	// a guessed key can be confirmed. An empty secret logs keys as they are
	// (attribute key).
	KeySecret []byte
	// Level is the level of ordinary transitions. The zero value is Info.
	// Lease losses, refused heartbeats and backend errors are logged at
	// Warn, or at Level when that is higher.
	Level slog.Level
	// Message is the message of every line; empty means DefaultMessage.
	Message string
}

// Observer returns an idem.Observer that writes one line per transition to
// logger, with ctx passed on so that handlers can add request-scoped
// values. The attributes are transition, key (or key_hmac), token, and
// when they apply prev_token, status, op, err, ambiguous, claim, func and
// finish (durations). A nil logger uses slog.Default().
func Observer(logger *slog.Logger, opts Options) idem.Observer {
	if logger == nil {
		logger = slog.Default()
	}
	if opts.Message == "" {
		opts.Message = DefaultMessage
	}
	warn := max(opts.Level, slog.LevelWarn)
	return func(ctx context.Context, ev idem.Event) {
		level := opts.Level
		switch ev.Transition {
		case idem.TransitionLeaseLost, idem.TransitionHeartbeatRefused, idem.TransitionBackendError:
			level = warn
		}
		if !logger.Enabled(ctx, level) {
			return
		}
		logger.LogAttrs(ctx, level, opts.Message, attrs(ev, opts.KeySecret)...)
	}
}

// attrs returns the attributes of one line.
func attrs(ev idem.Event, secret []byte) []slog.Attr {
	a := make([]slog.Attr, 0, 10)
	a = append(a, slog.String("transition", ev.Transition.String()))
	if len(secret) > 0 {
		a = append(a, slog.String("key_hmac", KeyDigest(secret, ev.Key)))
	} else {
		a = append(a, slog.String("key", ev.Key))
	}
	if ev.Token != 0 {
		a = append(a, slog.Uint64("token", uint64(ev.Token)))
	}
	if ev.PrevToken != 0 {
		a = append(a, slog.Uint64("prev_token", uint64(ev.PrevToken)))
	}
	if ev.Status != 0 {
		a = append(a, slog.String("status", ev.Status.String()))
	}
	if ev.Op != "" {
		a = append(a, slog.String("op", ev.Op))
	}
	if ev.Err != nil {
		msg := ev.Err.Error()
		if len(secret) > 0 {
			msg = Redact(msg, ev.Key, "<key "+KeyDigest(secret, ev.Key)[:16]+">")
		}
		a = append(a, slog.String("err", msg), slog.Bool("ambiguous", idem.Ambiguous(ev.Err)))
	}
	if ev.Claim != 0 {
		a = append(a, slog.Duration("claim", ev.Claim))
	}
	if ev.Func != 0 {
		a = append(a, slog.Duration("func", ev.Func))
	}
	if ev.Finish != 0 {
		a = append(a, slog.Duration("finish", ev.Finish))
	}
	return a
}

// KeyDigest returns the lowercase hex HMAC-SHA256 of key under secret: the
// key_hmac attribute of a line about key. Pass the stored key (with its
// scope, idem.StorageKey), as the engine's events carry it.
func KeyDigest(secret []byte, key string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil))
}

// Redact returns text with every occurrence of storageKey, of the caller's
// key inside it (the part after its scopes, see idem.StorageKey), and of
// their Go-quoted forms replaced by repl. Error texts of the engine and the
// stores quote either form.
func Redact(text, storageKey, repl string) string {
	if storageKey == "" {
		return text
	}
	pairs := []string{strconv.Quote(storageKey), repl}
	k := callerKey(storageKey)
	if k != storageKey && k != "" {
		pairs = append(pairs, strconv.Quote(k), repl)
	}
	pairs = append(pairs, storageKey, repl)
	if k != storageKey && k != "" {
		pairs = append(pairs, k, repl)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// callerKey inverts idem.StorageKey: the key a caller passed, without the
// scopes in front of it.
func callerKey(stored string) string {
	if strings.HasPrefix(stored, ":") {
		return stored[1:]
	}
	if i := strings.Index(stored, "::"); i >= 0 {
		return stored[i+2:]
	}
	if i := strings.LastIndexByte(stored, ':'); i >= 0 {
		return stored[i+1:]
	}
	return stored
}
