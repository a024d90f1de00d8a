package main

// etcd as a lock service, the way its users take locks: go.etcd.io/etcd's
// own Go client and its concurrency.Mutex, one session (a lease kept alive
// by the client) per client. Only the lock scenarios run against it.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// etcdArgs runs one etcd member named name on loopback, its data in dir,
// with the defaults otherwise (heartbeat 100 ms, election 1 s, fsync on
// every commit). initialCluster is --initial-cluster; empty: name alone.
// etcd's own logs go to the server's log.
func etcdArgs(dir, name string, clientPort, peerPort int, initialCluster string) []string {
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	if initialCluster == "" {
		initialCluster = name + "=" + peer
	}
	return []string{
		"--name", name, "--data-dir", dir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", initialCluster, "--initial-cluster-state", "new",
		"--log-level", "warn", "--logger", "zap",
	}
}

// etcdAnswers is etcd's readiness: a fresh client's Status answered.
func etcdAnswers(addr string) error {
	c, err := newEtcdClient(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = c.Status(ctx, addr)
	return err
}

func newEtcdClient(addr string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{addr},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
		// Block until connected, so that dialing is not measured.
		DialOptions: []grpc.DialOption{grpc.WithBlock()}, //nolint:staticcheck // the option etcd's client documents
	})
}

// etcdConns is how many clients (gRPC connections) a run's workers share:
// a client multiplexes its calls, and one per worker would be 10,000
// connections in the expiry scenario.
const etcdConns = 16

// dialEtcd opens the run's etcd clients.
func dialEtcd(addr string) ([]*clientv3.Client, error) {
	var cs []*clientv3.Client
	for range etcdConns {
		c, err := newEtcdClient(addr)
		if err != nil {
			closeEtcd(cs)
			return nil, fmt.Errorf("etcd client: %w", err)
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func closeEtcd(cs []*clientv3.Client) {
	for _, c := range cs {
		c.Close()
	}
}

// etcdMinTTL is the shortest lease etcd grants with its default election
// timeout (1 s) and heartbeat (100 ms): 3/2 of the election timeout, rounded
// up to whole seconds. A shorter TTL is raised to it by the server.
const etcdMinTTL = 2

// etcdTTL is the session TTL for a lease ttl: whole seconds, rounded up
// (a lease is not shortened), no less than etcd's minimum.
func etcdTTL(ttl time.Duration) int {
	return max(int(math.Ceil(ttl.Seconds())), etcdMinTTL)
}

var errNotEtcd = errors.New("not a scenario for etcd")

// etcdLocker takes (lock, key) as a concurrency.Mutex on the prefix
// /lock/key, in the worker's session, whose TTL stands for the lease's.
// Waiting is the Mutex's: it watches the key ahead of it in line.
type etcdLocker struct{}

func (etcdLocker) hold(ctx context.Context, w *worker, key string, ttl time.Duration) (lease, error) {
	if err := w.session(ctx, ttl); err != nil {
		return lease{}, err
	}
	mu := concurrency.NewMutex(w.etcdSession, "/"+lockName+"/"+key)
	if err := mu.Lock(ctx); err != nil {
		return lease{}, err
	}
	return lease{key: key, etcd: mu}, nil
}

func (etcdLocker) release(ctx context.Context, _ *worker, l lease) error {
	return l.etcd.Unlock(ctx)
}

// stopRenewing orphans the session: its lease is no longer kept alive and
// ends a TTL after the last keep-alive, which was sent no later than now.
// The deadline given is thus no earlier than etcd's, and the lateness
// measured from it, if anything, too small.
func (etcdLocker) stopRenewing(w *worker, _ lease, _ int64, ttl time.Duration) int64 {
	w.etcdSession.Orphan()
	w.etcdSession = nil
	return now() + int64(time.Duration(etcdTTL(ttl))*time.Second)
}

func (etcdLocker) tryHold(context.Context, redis.Pipeliner, *worker, string, time.Duration) func() (lease, bool, error) {
	return func() (lease, bool, error) { return lease{}, false, errNotEtcd }
}

func (etcdLocker) renew(context.Context, *worker, lease, time.Duration) error { return errNotEtcd }

func (etcdLocker) prepare(context.Context, *redis.Client) error { return nil }

// session makes sure the worker has a session of the TTL that stands for
// ttl, making one (a lease grant and its keep-alive) if not.
func (w *worker) session(ctx context.Context, ttl time.Duration) error {
	secs := etcdTTL(ttl)
	if w.etcdSession != nil && w.etcdTTL == secs {
		return nil
	}
	if w.etcdSession != nil {
		w.etcdSession.Close()
	}
	s, err := concurrency.NewSession(w.etcd, concurrency.WithTTL(secs), concurrency.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("etcd session: %w", err)
	}
	w.etcdSession, w.etcdTTL = s, secs
	return nil
}
