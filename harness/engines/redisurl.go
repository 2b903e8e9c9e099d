package engines

import (
	"fmt"
	neturl "net/url"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/chaos/backendfault"
	"github.com/idembench/idembench/chaos/servers"
)

// redisClient returns the client of a Redis URL and the store options it
// asks for. A URL with master_name is a go-redis failover URL (the
// Sentinels', redis.ParseFailoverURL): the client follows a promotion.
// A URL with backendfault.ClusterParam is a Cluster's
// (redis.ParseClusterURL): the client reloads its slot map when a dial
// fails, so it follows a replica's take-over. The backendfault WAIT
// parameters set redisstore's WaitReplicas and WaitTimeout. These
// parameters are removed before go-redis parses the URL.
func redisClient(raw string) (redis.UniversalClient, redisstore.Options, error) {
	var sopts redisstore.Options
	u, err := neturl.Parse(raw)
	if err != nil {
		return nil, sopts, err
	}
	q := u.Query()
	if v := q.Get(backendfault.WaitReplicasParam); v != "" {
		if sopts.WaitReplicas, err = strconv.Atoi(v); err != nil {
			return nil, sopts, fmt.Errorf("%s: %w", backendfault.WaitReplicasParam, err)
		}
	}
	if v := q.Get(backendfault.WaitTimeoutParam); v != "" {
		if sopts.WaitTimeout, err = time.ParseDuration(v); err != nil {
			return nil, sopts, fmt.Errorf("%s: %w", backendfault.WaitTimeoutParam, err)
		}
	}
	cluster := false
	if v := q.Get(backendfault.ClusterParam); v != "" {
		if cluster, err = strconv.ParseBool(v); err != nil {
			return nil, sopts, fmt.Errorf("%s: %w", backendfault.ClusterParam, err)
		}
	}
	q.Del(backendfault.WaitReplicasParam)
	q.Del(backendfault.WaitTimeoutParam)
	q.Del(backendfault.ClusterParam)
	u.RawQuery = q.Encode()
	if cluster {
		co, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, sopts, err
		}
		co.PoolSize = max(co.PoolSize, redisMinPool)
		return servers.FollowClusterFailover(co), sopts, nil
	}
	if q.Has("master_name") {
		fo, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, sopts, err
		}
		fo.PoolSize = max(fo.PoolSize, redisMinPool)
		return redis.NewFailoverClient(fo), sopts, nil
	}
	opt, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, sopts, err
	}
	opt.PoolSize = max(opt.PoolSize, redisMinPool)
	return redis.NewClient(opt), sopts, nil
}
