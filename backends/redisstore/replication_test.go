package redisstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

// startReplicated starts a primary and one replica of it (no persistence)
// and returns their clients once the replica's link is up.
func startReplicated(t *testing.T) (primary, replica *redis.Client) {
	t.Helper()
	dir := t.TempDir()
	paddr := startServer(t, dir, "--repl-diskless-sync-delay", "0")
	host, port, _ := strings.Cut(paddr, ":")
	raddr := startServer(t, dir, "--replicaof", host, port)
	primary = redis.NewClient(&redis.Options{Addr: paddr})
	replica = redis.NewClient(&redis.Options{Addr: raddr})
	t.Cleanup(func() { _ = primary.Close(); _ = replica.Close() })
	ctx := ctxT(t)
	for {
		info, err := replica.Info(ctx, "replication").Result()
		// Linked is not yet acknowledging: wait until a WAIT counts the
		// replica, so that a test's first write is not judged on the
		// initial sync.
		if err == nil && strings.Contains(info, "master_link_status:up") {
			if n, err := primary.Do(ctx, "WAIT", 1, 100).Int64(); err == nil && n >= 1 {
				return primary, replica
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("replica %s never linked to %s: %v\n%s", raddr, paddr, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWaitReplicas(t *testing.T) {
	primary, replica := startReplicated(t)
	fp := idem.FingerprintString("r")
	tests := []struct {
		name     string
		replicas int
		wantErr  bool // every write reports ErrNotReplicated
	}{
		{"off", 0, false},
		{"one of one", 1, false},
		{"two of one", 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			// A reachable replica gets a generous timeout (a loaded machine
			// can take longer than 100ms to acknowledge); the missing one
			// must time out.
			timeout := 5 * time.Second
			if tc.wantErr {
				timeout = 100 * time.Millisecond
			}
			s := newStore(t, primary, Options{WaitReplicas: tc.replicas, WaitTimeout: timeout})
			check := func(what string, err error) {
				t.Helper()
				switch {
				case !tc.wantErr && err != nil:
					t.Fatalf("%s: %v", what, err)
				case tc.wantErr && !(errors.Is(err, ErrNotReplicated) && idem.Ambiguous(err) && errors.Is(err, idem.ErrBackend)):
					t.Fatalf("%s = %v; want an ambiguous backend error wrapping ErrNotReplicated", what, err)
				}
			}
			start := time.Now()
			l, _, err := s.Acquire(ctx, "k", fp, time.Minute)
			check("Acquire", err)
			if tc.wantErr {
				if elapsed := time.Since(start); elapsed < 90*time.Millisecond {
					t.Errorf("Acquire returned after %v, before the WAIT timeout", elapsed)
				}
				// The claim was applied on the primary all the same.
				rec, err := s.Get(ctx, "k")
				if err != nil || rec.Status != idem.StatusInProgress {
					t.Fatalf("after an unreplicated claim: %+v, %v; want in progress", rec, err)
				}
				l = &idem.Lease{Key: "k", Token: rec.Token, Fingerprint: fp}
			}
			check("Heartbeat", s.Heartbeat(ctx, l, time.Minute))
			check("Complete", s.Complete(ctx, l, resp("done"), time.Minute))
			// A replay waits, like a write, until the record it read is
			// replicated (see TestReplayWaitsForReplication); without
			// WaitReplicas it waits for nothing.
			start = time.Now()
			_, rec, err := s.Acquire(ctx, "k", fp, time.Minute)
			check("replaying Acquire", err)
			if !tc.wantErr && (rec == nil || rec.Status != idem.StatusCompleted) {
				t.Fatalf("Acquire of a completed key = %+v, %v", rec, err)
			}
			if elapsed := time.Since(start); tc.replicas == 0 && elapsed > 90*time.Millisecond {
				t.Errorf("replaying Acquire without WaitReplicas took %v", elapsed)
			}
			// Whatever WAIT said, the replica has the completion (nothing
			// is in the way here); with WAIT 1 it had it before Complete
			// returned.
			rk := keysFor(s.opts.Prefix, "k").record
			if tc.replicas == 1 {
				if st, err := replica.HGet(ctx, rk, fieldStatus).Result(); err != nil || st != "completed" {
					t.Errorf("replica's status right after Complete with WAIT 1 = %q, %v", st, err)
				}
			}
		})
	}
}

// TestReplayWaitsForReplication: with WaitReplicas a completion whose
// WAIT failed is still on the primary, and a failover can lose it; a
// replay of it must then fail like the write did instead of acknowledging
// it. Once the replica has it again, the replay goes through.
func TestReplayWaitsForReplication(t *testing.T) {
	primary, replica := startReplicated(t)
	ctx := ctxT(t)
	fp := idem.FingerprintString("r")
	s := newStore(t, primary, Options{WaitReplicas: 1, WaitTimeout: 200 * time.Millisecond})
	// The claim is made while the replica is there, with a timeout a
	// loaded machine cannot miss: only the completion below is meant to
	// go unreplicated.
	patient, err := New(primary, Options{Prefix: s.opts.Prefix, WaitReplicas: 1, WaitTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := patient.Acquire(ctx, "k", fp, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The replica goes away: the completion stays on the primary only.
	if err := replica.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, l, resp("done"), time.Minute); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("Complete without the replica = %v, want ErrNotReplicated", err)
	}
	rk := keysFor(s.opts.Prefix, "k").record
	if st, _ := replica.HGet(ctx, rk, fieldStatus).Result(); st == "completed" {
		t.Fatal("the detached replica has the completion")
	}
	_, rec, err := s.Acquire(ctx, "k", fp, time.Minute)
	if !errors.Is(err, ErrNotReplicated) || !idem.Ambiguous(err) || rec != nil {
		t.Fatalf("replay of an unreplicated completion = %+v, %v; want an ambiguous ErrNotReplicated", rec, err)
	}
	// The replica comes back and resyncs: the replay goes through.
	host, port, _ := strings.Cut(primary.Options().Addr, ":")
	if err := replica.ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	for {
		_, rec, err = s.Acquire(ctx, "k", fp, time.Minute)
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || rec == nil || rec.Status != idem.StatusCompleted {
		t.Fatalf("replay after the replica came back = %+v, %v", rec, err)
	}
	if st, err := replica.HGet(ctx, rk, fieldStatus).Result(); err != nil || st != "completed" {
		t.Fatalf("replica's status after the replay = %q, %v", st, err)
	}
}

func TestWaitReplicasOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	tests := []struct {
		name   string
		client redis.UniversalClient
		opts   Options
		ok     bool
	}{
		{"negative replicas", c, Options{WaitReplicas: -1}, false},
		{"negative timeout", c, Options{WaitReplicas: 1, WaitTimeout: -time.Second}, false},
		{"ring with WAIT", ring, Options{WaitReplicas: 1}, false},
		{"ring without WAIT", ring, Options{}, true},
		{"client with WAIT", c, Options{WaitReplicas: 1}, true},
	}
	for _, tc := range tests {
		s, err := New(tc.client, tc.opts)
		if (err == nil) != tc.ok {
			t.Errorf("%s: New = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err == nil && tc.opts.WaitReplicas > 0 && s.opts.WaitTimeout != DefaultWaitTimeout {
			t.Errorf("%s: WaitTimeout = %v, want the default %v", tc.name, s.opts.WaitTimeout, DefaultWaitTimeout)
		}
	}
}
