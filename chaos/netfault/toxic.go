package netfault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
)

// ErrStuck means toxiproxy did not finish adding or removing a toxic within
// toxicTimeout. Toxiproxy waits for every connection's pipeline to take the
// change; the guard toxic keeps that prompt, so this is a safety net that
// should never fire.
var ErrStuck = errors.New("netfault: toxiproxy did not apply the change in time")

// toxicTimeout bounds each change to toxiproxy's toxic chain.
const toxicTimeout = 10 * time.Second

// toxic is one toxiproxy toxic. Streams are named as toxiproxy does:
// "upstream" carries requests (client to server), "downstream" replies.
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// toxicsFor maps a fault to toxiproxy toxics (names prefixed "netfault_" so
// faults of different kinds never collide):
//
//	latency       none: the downstream guard delays replies (see guard)
//	reset         reset_peer {timeout: 0} on upstream and downstream
//	drop-replies  timeout {timeout: 0} on downstream
//	partition     timeout {timeout: 0} on upstream and downstream
//
// A timeout toxic with timeout 0 drops data and never closes the
// connection; when it is removed it closes the connection.
func toxicsFor(f chaos.Fault) []toxic {
	mk := func(stream, typ string, attrs map[string]any) toxic {
		return toxic{
			Name:       "netfault_" + string(f.Kind) + "_" + stream,
			Type:       typ,
			Stream:     stream,
			Toxicity:   1,
			Attributes: attrs,
		}
	}
	never := map[string]any{"timeout": 0}
	switch f.Kind {
	case history.FaultReset:
		return []toxic{mk("upstream", "reset_peer", never), mk("downstream", "reset_peer", never)}
	case history.FaultDropReplies:
		return []toxic{mk("downstream", "timeout", never)}
	case history.FaultPartition:
		return []toxic{mk("upstream", "timeout", never), mk("downstream", "timeout", never)}
	}
	return nil
}

func (p *Proxy) addToxic(t toxic) error {
	_, err := addToxic(p.tp, t)
	return err
}

// addToxic adds t to tp's chain and returns toxiproxy's instance of it.
func addToxic(tp *toxiproxy.Proxy, t toxic) (toxics.Toxic, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("netfault: %w", err)
	}
	var w *toxics.ToxicWrapper
	err = bounded("add "+t.Name, func() error {
		var err error
		w, err = tp.Toxics.AddToxicJson(bytes.NewReader(b))
		return err
	})
	if err != nil {
		return nil, err
	}
	return w.Toxic, nil
}

func (p *Proxy) removeToxic(t toxic) error {
	return bounded("remove "+t.Name, func() error {
		return p.tp.Toxics.RemoveToxic(context.Background(), t.Name)
	})
}

// bounded runs op and waits for it at most toxicTimeout. On a time-out the
// call goes on in the background (it is inside toxiproxy and cannot be
// cancelled) and ErrStuck is returned.
func bounded(what string, op func() error) error {
	done := make(chan error, 1)
	go func() { done <- op() }()
	t := time.NewTimer(toxicTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("netfault: %s: %w", what, err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("%w: %s", ErrStuck, what)
	}
}
