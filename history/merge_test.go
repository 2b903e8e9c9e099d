package history

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := &History{Header: Header{Scenario: "s", Seed: 1, Process: 1, Start: t0.Add(time.Second), Options: map[string]string{"a": "1"}},
		Ops: []Op{{Kind: KindCall, Client: 1, Call: 10, Return: 11, Outcome: Error}, {Kind: KindCall, Client: 1, Call: 30, Return: 31, Outcome: Error}}}
	b := &History{Header: Header{Scenario: "s", Seed: 1, Process: 2, Start: t0, Options: map[string]string{"b": "2"}},
		Ops: []Op{{Kind: KindCall, Client: 2, Call: 20, Return: 21, Outcome: Error}, {Kind: KindCall, Client: 2, Call: 30, Return: 32, Outcome: Error}}}
	var bufA, bufB bytes.Buffer
	if err := Encode(&bufA, a); err != nil {
		t.Fatal(err)
	}
	if err := Encode(&bufB, b); err != nil {
		t.Fatal(err)
	}
	m, err := MergeStreams(&bufA, &bufB)
	if err != nil {
		t.Fatal(err)
	}
	var calls []int64
	var clients []int
	for _, op := range m.Ops {
		calls = append(calls, op.Call)
		clients = append(clients, op.Client)
	}
	if want := []int64{10, 20, 30, 30}; !equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	if want := []int{1, 2, 1, 2}; !equal(clients, want) {
		t.Errorf("tie order %v, want %v", clients, want)
	}
	if !m.Header.Start.Equal(t0) || m.Header.Process != 0 || m.Header.Options["a"] != "1" || m.Header.Options["b"] != "2" {
		t.Errorf("merged header %+v", m.Header)
	}
	if a.Header.Options["b"] != "" {
		t.Error("Merge modified its input's options")
	}

	c := &History{Header: Header{Scenario: "s", Seed: 2}}
	if _, err := Merge(a, c); err == nil || !strings.Contains(err.Error(), "merge input 1: header seed") {
		t.Errorf("Merge with a different seed: %v", err)
	}
	d := &History{Header: Header{Scenario: "s", Seed: 1, Options: map[string]string{"a": "9"}}}
	if _, err := Merge(a, d); err == nil || !strings.Contains(err.Error(), "option a") {
		t.Errorf("Merge with conflicting options: %v", err)
	}
	if _, err := Merge(); err == nil {
		t.Error("Merge() of nothing succeeded")
	}
	if _, err := MergeStreams(strings.NewReader("junk\n")); err == nil || !strings.Contains(err.Error(), "stream 0") {
		t.Errorf("MergeStreams(junk) = %v", err)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
