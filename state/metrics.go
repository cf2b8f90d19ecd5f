package state

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// storeMetrics holds the store's collectors; see the package doc for names.
type storeMetrics struct {
	pebble         *pebbleCollector
	commitDuration *prometheus.HistogramVec
}

func newStoreMetrics(db *pebble.DB) *storeMetrics {
	return &storeMetrics{
		pebble: newPebbleCollector(db),
		commitDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "odwatch_state_commit_duration_seconds",
			Help: "Time to commit one synced state batch (fsync included), by operation.",
			// fsync on SSDs is ~0.1-2 ms, on network disks tens of ms.
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12),
		}, []string{"op"}),
	}
}

func (m *storeMetrics) register(r prometheus.Registerer) error {
	if err := r.Register(m.pebble); err != nil {
		return err
	}
	if err := r.Register(m.commitDuration); err != nil {
		r.Unregister(m.pebble)
		return err
	}
	return nil
}

func (m *storeMetrics) unregister(r prometheus.Registerer) {
	r.Unregister(m.pebble)
	r.Unregister(m.commitDuration)
}

// pebbleCollector exposes a few Pebble metrics, read from DB.Metrics on
// every scrape (cheap: a snapshot of counters under the DB mutex).
type pebbleCollector struct {
	db *pebble.DB

	diskUsage, l0Files, l0Sublevels, readAmp, memtable *prometheus.Desc
	compactions, flushes                               *prometheus.Desc
	cacheSize, cacheHits, cacheMisses                  *prometheus.Desc
}

func newPebbleCollector(db *pebble.DB) *pebbleCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("odwatch_pebble_"+name, help, nil, nil)
	}
	return &pebbleCollector{
		db:          db,
		diskUsage:   d("disk_usage_bytes", "On-disk size of the state store (sstables, WAL, manifest)."),
		l0Files:     d("l0_files", "Number of sstables in L0."),
		l0Sublevels: d("l0_sublevels", "Number of L0 sublevels (L0 read amplification)."),
		readAmp:     d("read_amplification", "Total read amplification of the LSM."),
		memtable:    d("memtable_size_bytes", "Bytes allocated by memtables."),
		compactions: d("compactions_total", "Compactions since the store was opened."),
		flushes:     d("flushes_total", "Memtable flushes since the store was opened."),
		cacheSize:   d("block_cache_size_bytes", "Bytes held in the block cache."),
		cacheHits:   d("block_cache_hits_total", "Block cache hits."),
		cacheMisses: d("block_cache_misses_total", "Block cache misses."),
	}
}

func (c *pebbleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.diskUsage, c.l0Files, c.l0Sublevels, c.readAmp,
		c.memtable, c.compactions, c.flushes, c.cacheSize, c.cacheHits, c.cacheMisses} {
		ch <- d
	}
}

func (c *pebbleCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.db.Metrics()
	g := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	ctr := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	g(c.diskUsage, float64(m.DiskSpaceUsage()))
	g(c.l0Files, float64(m.Levels[0].TablesCount))
	g(c.l0Sublevels, float64(m.Levels[0].Sublevels))
	g(c.readAmp, float64(m.ReadAmp()))
	g(c.memtable, float64(m.MemTable.Size))
	ctr(c.compactions, float64(m.Compact.Count))
	ctr(c.flushes, float64(m.Flush.Count))
	g(c.cacheSize, float64(m.BlockCache.Size))
	ctr(c.cacheHits, float64(m.BlockCache.Hits))
	ctr(c.cacheMisses, float64(m.BlockCache.Misses))
}
