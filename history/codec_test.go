package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sampleHistory() *History {
	return &History{
		Header: Header{
			Format: Format, Version: FormatVersion, Tool: "idembench test", Scenario: "crash-after-effect",
			Seed: 42, Backend: "memstore", Engine: "fenced+recovery",
			Options:  map[string]string{"clients": "8"},
			Start:    time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			LeaseTTL: 2 * time.Second, Clock: ClockName, Retention: time.Hour,
		},
		Ops: []Op{
			{Kind: KindCall, Client: 1, Worker: 2, Key: "k1", Request: 7, Attempt: 1, FP: "fp1",
				Call: 100, Return: 200, Intended: 90, Outcome: Executed, Token: 3, Resp: "abcd", Exec: "e1"},
			{Kind: KindEffect, Client: 1, Worker: 2, Key: "k1", Call: 120, Return: 130, Token: 3, Exec: "e1", Applied: true},
			{Kind: KindEffect, Client: 2, Worker: 3, Key: "k1", Call: 140, Return: NoReturn, Token: 4, Outcome: Unknown},
			{Kind: KindCall, Client: 2, Key: "k1", Call: 150, Return: NoReturn, Outcome: Unknown, Err: "context deadline exceeded"},
			{Kind: KindFault, Client: -1, Call: 160, Return: 170, Fault: FaultCrash, Label: `crash "after-effect" <&> é`},
			{Kind: KindFault, Client: -1, Worker: -1, Call: 165, Return: NoReturn, Fault: FaultDropReplies, Err: "proxy gone"},
			{Kind: KindCall, Client: 3, Key: "k\u00e9\n\"x", Call: 300, Return: 310, Outcome: Replayed, Resp: "abcd", Probe: true},
			{Kind: KindCall, Client: -5, Key: "k2", Call: -3, Return: -1, Outcome: Mismatch, Token: 1<<64 - 1},
			{Kind: KindLease, Client: 1, Worker: 2, Key: "k1", Call: 95, Return: 99, Token: 3, Exec: "e1", Transition: TransitionAcquired},
			{Kind: KindLease, Client: 2, Worker: 3, Key: "k1", Call: 135, Return: 139, Token: 4, PrevToken: 3, Exec: "e2", Transition: TransitionTakenOver},
			{Kind: KindLease, Client: 1, Worker: 2, Key: "k1", Call: 140, Return: 141, Token: 3, Exec: "e1", Transition: TransitionLeaseLost, Label: "complete"},
		},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	h := sampleHistory()
	var buf bytes.Buffer
	if err := Encode(&buf, h); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 1+len(h.Ops) {
		t.Fatalf("encoded %d lines, want %d:\n%s", n, 1+len(h.Ops), buf.String())
	}
	got, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestAppendOpMatchesEncodingJSON checks that the fast encoder writes what
// encoding/json writes for the same op.
func TestAppendOpMatchesEncodingJSON(t *testing.T) {
	for i, op := range sampleHistory().Ops {
		want, err := json.Marshal(&op)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendOp(nil, &op); !bytes.Equal(got, want) {
			t.Errorf("op %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func TestEncodeFillsHeaderAndRejectsInvalidOps(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, &History{}); err != nil {
		t.Fatal(err)
	}
	h, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if h.Header.Format != Format || h.Header.Version != FormatVersion || len(h.Ops) != 0 {
		t.Errorf("empty history decoded as %+v", h)
	}
	bad := &History{Ops: []Op{{Kind: KindCall, Call: 1, Return: 2}}}
	if err := Encode(&buf, bad); err == nil || !strings.Contains(err.Error(), "op 0") {
		t.Errorf("Encode(invalid op) = %v, want error naming op 0", err)
	}
	if err := Encode(&buf, &History{Header: Header{Version: 99}}); err == nil {
		t.Error("Encode accepted version 99")
	}
}

// TestDecodeFile: a history file decodes as Decode reads it; one that does
// not decode is an error naming the file and the line; a missing file is
// the open error.
func TestDecodeFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.jsonl"), filepath.Join(dir, "bad.jsonl")
	var b bytes.Buffer
	if err := Encode(&b, sampleHistory()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, err := DecodeFile(good); err != nil || !cmp.Equal(h, sampleHistory()) {
		t.Errorf("DecodeFile(good) = %v, %v; diff %s", h, err, cmp.Diff(sampleHistory(), h))
	}
	if h, err := DecodeFile(bad); h != nil || err == nil || !strings.HasPrefix(err.Error(), bad+": ") || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("DecodeFile(bad) = %v, %v; want an error naming %s and its line", h, err, bad)
	}
	if _, err := DecodeFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("DecodeFile(missing) = %v, want os.ErrNotExist", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	const hdr = `{"format":"idembench-history","version":1,"seed":1,"start":"0001-01-01T00:00:00Z"}` + "\n"
	const good = `{"kind":"call","client":1,"worker":0,"key":"k","call":1,"ret":2,"outcome":"in_progress"}` + "\n"
	tests := []struct {
		name, in, want string
	}{
		{"empty input", "", "empty input"},
		{"op as header", good, "line 1: not a history header"},
		{"wrong format", `{"format":"other","version":1}` + "\n", "line 1: not a history header"},
		{"missing format", `{"version":1}` + "\n", "line 1: not a history header"},
		{"unknown header field", `{"format":"idembench-history","version":1,"colour":"red"}` + "\n", `line 1: not a history header: json: unknown field "colour"`},
		{"future version", `{"format":"idembench-history","version":2}` + "\n", "line 1: history: unsupported format version 2"},
		{"header not json", "hello\n", "line 1"},
		{"unknown op field", hdr + good + `{"kind":"call","client":1,"worker":0,"call":1,"ret":2,"outcome":"error","extra":1}` + "\n", `line 3: json: unknown field "extra"`},
		{"unknown kind", hdr + `{"kind":"probe","client":1,"worker":0,"call":1,"ret":2}` + "\n", `line 2: history: unknown kind "probe"`},
		{"unknown fault kind", hdr + `{"kind":"fault","client":-1,"worker":-1,"call":1,"ret":2,"fault":"flood"}` + "\n", `line 2: history: fault op of unknown kind "flood"`},
		{"fault kind on a call", hdr + `{"kind":"call","client":1,"worker":0,"call":1,"ret":2,"outcome":"error","fault":"crash"}` + "\n", "line 2: history: call op with a fault kind"},
		{"unknown outcome", hdr + `{"kind":"call","client":1,"worker":0,"call":1,"ret":2,"outcome":"timeout"}` + "\n", `line 2: history: unknown outcome "timeout"`},
		{"invalid op", hdr + good + good + `{"kind":"call","client":1,"worker":0,"call":5,"ret":2,"outcome":"error"}` + "\n", "line 4: history: call op returns at 2 before its call at 5"},
		{"empty line", hdr + "\n" + good, "line 2: empty line"},
		{"trailing data", hdr + good[:len(good)-1] + " {}\n", "line 2: trailing data"},
		{"not an object", hdr + "[1,2]\n", "line 2"},
		{"null line", hdr + "null\n", "line 2: history: invalid kind 0"},
		{"number as string", hdr + `{"kind":"call","client":"1","worker":0,"call":1,"ret":2,"outcome":"error"}` + "\n", "line 2"},
		{"float time", hdr + `{"kind":"call","client":1,"worker":0,"call":1.5,"ret":2,"outcome":"error"}` + "\n", "line 2"},
		{"truncated", hdr + good[:20], "line 2"},
		{"too long", hdr + `{"kind":"call","key":"` + strings.Repeat("x", MaxLineSize) + `"}` + "\n", "line 2: longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := Decode(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode() = %v, %v; want error containing %q", h, err, tt.want)
			}
			if h != nil {
				t.Errorf("Decode returned a partial history with an error")
			}
		})
	}
}

func TestDecodeAcceptsOtherJSONSpellings(t *testing.T) {
	// Lines not in Encode's compact form go through encoding/json: spaces,
	// escapes, CRLF and a last line without a newline are all fine.
	in := `{"format":"idembench-history","version":1,"seed":3,"start":"0001-01-01T00:00:00Z"}` + "\r\n" +
		` { "kind" : "effect", "client": 1, "worker": 2, "key": "k\u00e9", "call": 5, "ret": 6, "applied": true, "token": 9 } ` + "\r\n" +
		`{"kind":"call","client":0,"worker":0,"key":"a\"b","call":7,"ret":8,"outcome":"replayed","resp":"ff"}`
	h, err := Decode(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Op{
		{Kind: KindEffect, Client: 1, Worker: 2, Key: "ké", Call: 5, Return: 6, Applied: true, Token: 9},
		{Kind: KindCall, Key: `a"b`, Call: 7, Return: 8, Outcome: Replayed, Resp: "ff"},
	}
	if diff := cmp.Diff(want, h.Ops); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
}

// TestDecodeFaultWithoutKind: a history written before fault ops carried
// their kind still decodes; its faults have the zero kind and count as
// "other".
func TestDecodeFaultWithoutKind(t *testing.T) {
	in := `{"format":"idembench-history","version":1,"seed":3,"start":"0001-01-01T00:00:00Z"}` + "\n" +
		`{"kind":"fault","client":-1,"worker":-1,"call":5,"ret":9,"label":"net partition"}` + "\n" +
		`{"kind":"fault","client":-1,"worker":-1,"call":6,"ret":6,"fault":"crash","label":"crash at before-fn"}` + "\n"
	h, err := Decode(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Op{
		{Kind: KindFault, Client: -1, Worker: -1, Call: 5, Return: 9, Label: "net partition"},
		Fault(FaultCrash, "crash at before-fn", 6, 6),
	}
	if diff := cmp.Diff(want, h.Ops); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	if got := CountFaults(h.Ops).String(); got != "crash 1, other 1" {
		t.Errorf("CountFaults = %q, want %q", got, "crash 1, other 1")
	}
}

func TestReaderStreams(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, sampleHistory()); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().Seed != 42 {
		t.Errorf("header seed %d", r.Header().Seed)
	}
	n := 0
	var op Op
	for r.Read(&op) == nil {
		n++
	}
	if n != len(sampleHistory().Ops) || r.Line() != n+1 {
		t.Errorf("read %d ops, line %d", n, r.Line())
	}
}
