package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/idembench/idembench/idem"
)

// Bounds on what a corrupt record's dump shows: a field's value is cut
// after maxShownValue bytes and its name after maxShownName (the full
// length is printed).
const (
	maxShownValue = 256
	maxShownName  = 64
)

// corruptJSON is a corrupt record as inspect and list --corrupt print it.
type corruptJSON struct {
	keyName
	Corrupt    bool        `json:"corrupt"`
	Reason     string      `json:"reason"`
	Type       string      `json:"type,omitempty"`
	Fields     []fieldJSON `json:"fields,omitempty"`
	MoreFields int         `json:"more_fields,omitempty"`
	Digest     string      `json:"digest,omitempty"`
}

// fieldJSON is one raw field: Text when the value is printable ASCII,
// else Hex; both cut after maxShownValue bytes (Truncated), Bytes the full
// length.
type fieldJSON struct {
	Name      string  `json:"name"`
	Text      *string `json:"text,omitempty"`
	Hex       string  `json:"hex,omitempty"`
	Bytes     int     `json:"bytes"`
	Truncated bool    `json:"truncated,omitempty"`
	Null      bool    `json:"null,omitempty"`
}

func toCorruptJSON(name keyName, r *idem.CorruptRecord) corruptJSON {
	j := corruptJSON{keyName: name, Corrupt: true, Reason: r.Reason, Type: r.Type, MoreFields: r.More, Digest: r.Digest}
	for _, f := range r.Fields {
		v, cut := f.Value, false
		if len(v) > maxShownValue {
			v, cut = v[:maxShownValue], true
		}
		fj := fieldJSON{Name: f.Name, Bytes: len(f.Value), Truncated: cut, Null: f.Null}
		switch {
		case f.Null:
		case printable(v):
			s := string(v)
			fj.Text = &s
		default:
			fj.Hex = hex.EncodeToString(v)
		}
		j.Fields = append(j.Fields, fj)
	}
	return j
}

// printable reports whether b is printable ASCII (0x20..0x7E).
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// fieldLine renders one raw field for text output: the name (quoted when
// it is not printable), then the value quoted, or as 0x-hex when it is
// binary, cut after maxShownValue bytes.
func fieldLine(f fieldJSON) string {
	name := f.Name
	if len(name) > maxShownName {
		name = name[:maxShownName] + "…"
	}
	if !printable([]byte(name)) || name == "" {
		name = strconv.Quote(name)
	}
	var v string
	switch {
	case f.Null:
		v = "NULL"
	case f.Text != nil:
		v = strconv.Quote(*f.Text)
		if f.Truncated {
			v += fmt.Sprintf("… (%d bytes)", f.Bytes)
		}
	default:
		v = "0x" + f.Hex
		if f.Truncated {
			v += "…"
		}
		v += fmt.Sprintf(" (%d bytes)", f.Bytes)
	}
	return fmt.Sprintf("  %-18s %s", name, v)
}

// errChangedMeanwhile says that a record Get found corrupt decoded when it
// was read again; inspect reads it again.
var errChangedMeanwhile = errors.New("the record changed while it was read")

// showCorrupt is inspect of a record that does not decode: its raw fields,
// the reason and the digest purge-corrupt needs. It exits exitCorrupt. A
// store without idem.CorruptLister reports Get's error alone.
func showCorrupt(ctx context.Context, e *env, name keyName, getErr error) (int, error) {
	cl, ok := e.store.(idem.CorruptLister)
	if !ok {
		return storeErr(getErr)
	}
	rec, err := cl.GetCorrupt(ctx, name.Stored)
	if errors.Is(err, idem.ErrNotCorrupt) {
		return exitBackend, fmt.Errorf("%w: %s decodes now", errChangedMeanwhile, name)
	}
	if err != nil {
		return storeErr(err)
	}
	j := toCorruptJSON(name, rec)
	lines := append(nameLines(name),
		"corrupt:      "+rec.Reason,
		"type:         "+rec.Type)
	if len(j.Fields) > 0 {
		lines = append(lines, "fields:")
	}
	for _, f := range j.Fields {
		lines = append(lines, fieldLine(f))
	}
	if rec.More > 0 {
		lines = append(lines, fmt.Sprintf("  … %d more", rec.More))
	}
	scope := ""
	if name.Scope != "" {
		scope = " --scope " + name.Scope
	}
	lines = append(lines, "digest:       "+rec.Digest,
		fmt.Sprintf("delete it with: idemctl [global flags]%s purge-corrupt %s --confirm %s", scope, name.Key, rec.Digest))
	e.out.print(j, lines...)
	return exitCorrupt, nil
}

// purgeJSON is the result of purge-corrupt.
type purgeJSON struct {
	keyName
	Digest string `json:"digest"`
	Purged bool   `json:"purged"`
	Reason string `json:"reason,omitempty"`
}

func purgeCorrupt(ctx context.Context, e *env, args []string) (int, error) {
	fs := flag.NewFlagSet("purge-corrupt", flag.ContinueOnError)
	confirm := fs.String("confirm", "", "")
	pos, err := subFlags(fs, args)
	if err != nil || len(pos) != 1 {
		return usageError(err, usagePurgeCorrupt)
	}
	if *confirm == "" {
		return usageError(errors.New("--confirm DIGEST is required: the digest inspect or list --corrupt printed for the record"), usagePurgeCorrupt)
	}
	name, err := e.storageKey(pos[0])
	if err != nil {
		return exitUsage, err
	}
	p, ok := e.store.(idem.CorruptPurger)
	if !ok {
		return exitBackend, errors.New("the store cannot purge corrupt records")
	}
	res := purgeJSON{keyName: name, Digest: *confirm}
	refuse := func(code int, reason string) (int, error) {
		res.Reason = reason
		e.out.print(res, "refused: "+reason)
		return code, nil
	}
	err = p.PurgeCorrupt(ctx, name.Stored, *confirm)
	switch {
	case errors.Is(err, idem.ErrNotCorrupt):
		return refuse(exitNotCorrupt, fmt.Sprintf("the record of %s decodes: it is not corrupt, nothing was deleted", name))
	case errors.Is(err, idem.ErrRecordChanged):
		return refuse(exitRefused, fmt.Sprintf("the record of %s no longer has digest %s: it changed since it was printed, nothing was deleted; run inspect again", name, *confirm))
	case err != nil:
		return storeErr(err)
	}
	res.Purged = true
	e.out.print(res, fmt.Sprintf("deleted the corrupt record of %s (digest %s); the next request with this key runs as new", name, *confirm))
	return exitOK, nil
}
