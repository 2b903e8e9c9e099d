// Package netfault puts an embedded TCP fault proxy between the engine and
// its backend (Redis, PostgreSQL) and injects the network faults of the
// fault catalog (docs/design/verification.md): latency, reset, a reply lost after the
// request was applied, and partition. It uses toxiproxy
// (github.com/Shopify/toxiproxy/v2) as a library: no toxiproxy server and no
// HTTP API run, and nothing is logged.
//
// New(ctx, upstream, opts) listens on 127.0.0.1 on a free port and forwards
// to upstream, which must be a loopback address; clients connect to Addr
// instead of the backend.
//
// # Faults
//
// Each fault is switched on by its method (or On with a chaos.Fault of one
// of the network kinds of history.FaultKinds) and off by Off(kind), by
// Heal (every fault), or by Inject, which holds one fault for its
// Duration. Faults of different kinds stack. "Upstream" below is the
// request direction (client to server), "downstream" the reply direction.
//
//   - Latency(d, jitter): every reply is delayed by d ± jitter, in order.
//     Requests reach the server at once, so a client that times out does
//     not know whether its request was applied.
//   - Reset(): toxiproxy's reset_peer on both directions. A connection is
//     closed as soon as a byte flows on it, and the byte is dropped
//     (connections opened during the fault get a TCP RST, older ones an
//     orderly close): requests sent during the fault are not applied,
//     commands fail at once.
//   - DropRepliesAfterApply(): the ambiguous fault. Toxiproxy's timeout toxic
//     (timeout 0) on the downstream only: requests reach the server and are
//     applied, replies vanish, nothing is closed, and the client times out
//     with an unknown outcome. This is the case the harness must record as
//     unknown, never as failed.
//   - Partition(): the timeout toxic on both directions: nothing passes and
//     nothing is closed; requests sent during it are never applied. The
//     proxy still accepts new connections, which then carry no bytes.
//
// When DropRepliesAfterApply or Partition ends, toxiproxy closes every
// connection that was open during it (its byte stream lost data); clients
// reconnect. Connection handshakes are affected like any other traffic.
//
// # Fault windows
//
// Every fault that was on is recorded as a fault op of the history
// (history.Fault: its kind, a label, start and end) on the clock of
// Options.Clock, so the harness adds the windows to its history on the
// same timeline as the operations. Windows returns them in the order the
// faults were switched on; a fault still on ends at history.NoReturn.
// Changing the delay of an active latency fault ends its window and opens a
// new one.
//
// # Robustness and cleanup
//
// Toxiproxy's own latency toxic, and the stage at the head of each
// connection's pipeline, send data on with a plain blocking channel send.
// When a client closes its connection while replies are still queued (a
// client time-out under latency, the common case in this harness), that send
// blocks forever: goroutines leak and removing a toxic hangs. So each
// direction of every connection carries a guard, a custom toxic that this
// package registers with toxiproxy and adds before the proxy starts. It
// implements the latency fault, always takes data from the head stage, sends
// only while also watching for interrupts and for Close, and gives a
// connection up (closing it and dropping its pending data) when the next
// stage has not taken a due chunk for 5 seconds: the client is gone or has
// stopped reading.
//
// Close switches every fault off (ending the open windows), makes every
// guard drop its data, stops the listener, and closes every connection;
// every goroutine the proxy started returns soon after (the package tests
// check this with goleak). Close is idempotent. Each change to toxiproxy's
// toxic chain is bounded by 10 seconds (ErrStuck), a safety net that the
// guards keep from firing.
package netfault
