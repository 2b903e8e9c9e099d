package engines

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedisClientURLs: each kind of Redis URL the harness hands a store
// opens the client that follows it, with the store options it carries,
// and a bad parameter is an error.
func TestRedisClientURLs(t *testing.T) {
	tests := []struct {
		name, url   string
		wantCluster bool
		wantAddrs   []string // Cluster only
		wantWait    int
		wantTimeout time.Duration
		wantErr     bool
	}{
		{name: "single", url: "redis://127.0.0.1:6379/0"},
		{name: "sentinel with WAIT", url: "redis://127.0.0.1:26379/0?master_name=m&wait_replicas=1&wait_timeout=1s",
			wantWait: 1, wantTimeout: time.Second},
		{name: "cluster", url: "redis://127.0.0.1:7000?addr=127.0.0.1%3A7001&addr=127.0.0.1%3A7002&dial_timeout=1s&cluster=true",
			wantCluster: true, wantAddrs: []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}},
		{name: "cluster=false is a single node", url: "redis://127.0.0.1:6379/0?cluster=false"},
		{name: "bad cluster value", url: "redis://127.0.0.1:7000?cluster=maybe", wantErr: true},
		{name: "bad wait", url: "redis://127.0.0.1:6379/0?wait_replicas=x", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, sopts, err := redisClient(tc.url)
			if tc.wantErr {
				if err == nil {
					client.Close()
					t.Fatalf("redisClient(%q) succeeded, want an error", tc.url)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			cc, isCluster := client.(*redis.ClusterClient)
			if isCluster != tc.wantCluster {
				t.Fatalf("client %T, want a Cluster client %t", client, tc.wantCluster)
			}
			if isCluster {
				o := cc.Options()
				if len(o.Addrs) != len(tc.wantAddrs) {
					t.Fatalf("addrs %v, want %v", o.Addrs, tc.wantAddrs)
				}
				for i := range o.Addrs {
					if o.Addrs[i] != tc.wantAddrs[i] {
						t.Fatalf("addrs %v, want %v", o.Addrs, tc.wantAddrs)
					}
				}
				if o.Dialer == nil || o.PoolSize < redisMinPool {
					t.Errorf("cluster client without the reloading dialer (%v) or with pool %d", o.Dialer != nil, o.PoolSize)
				}
			}
			if sopts.WaitReplicas != tc.wantWait || sopts.WaitTimeout != tc.wantTimeout {
				t.Errorf("store options wait %d/%v, want %d/%v", sopts.WaitReplicas, sopts.WaitTimeout, tc.wantWait, tc.wantTimeout)
			}
		})
	}
}
