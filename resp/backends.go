package resp

import (
	"fmt"

	"github.com/tenure-db/tenure/kv"
	"github.com/tenure-db/tenure/lockmod"
)

// openBackends is the wiring of the keyspace and the lock module, kept apart
// from the listener so that it can move to the package that embeds them
// both: the store is opened, a new epoch made durable before any grant
// (LOCK-10), and the lock module started on that epoch, bumping it through
// the store when its fence counter runs out (LOCK-02).
func openBackends(cfg Config, metrics *metrics) (*kv.Store, *lockmod.Manager, uint64, error) {
	store, err := kv.Open(cfg.Dir, kv.Options{
		FS:          cfg.FS,
		Fsync:       cfg.Fsync,
		Logger:      cfg.Logger,
		MaxValueLen: cfg.Limits.MaxBulkLen,
	})
	if err != nil {
		return nil, nil, 0, err
	}
	epoch, err := store.BumpEpoch()
	if err != nil {
		store.Close()
		return nil, nil, 0, fmt.Errorf("bump epoch in %s: %w", cfg.Dir, err)
	}
	locks := lockmod.New(lockmod.Config{
		Clock:    cfg.Clock,
		Epoch:    epoch,
		Bumper:   store,
		Observer: leaseObserver{m: metrics, log: cfg.Logger},
	})
	return store, locks, epoch, nil
}
