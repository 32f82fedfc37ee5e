// Package metrics is hoard's Prometheus/OpenMetrics page (/.cpr/metrics
// with --stats). The domain rooms do not import the metrics library:
// http hears requests through its Observer, store times its fsyncs
// through ObserveFsync, and up2k, idx and media expose plain counters
// that the collector here reads at each scrape.
package metrics

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	srvhttp "hoard/http"
	"hoard/idx"
	"hoard/media"
	"hoard/store"
	"hoard/up2k"
)

// Sources are what the scrape-time series read. Any may be nil.
type Sources struct {
	Store     *store.Store
	Up2k      *up2k.Manager
	Index     *idx.Indexer
	Media     *media.Service
	Downloads func() int64 // downloads being sent (http.Server.ActiveDownloads)
}

// Metrics holds hoard's series in a registry of its own (not the
// process-global one). It is an http.Observer and an http.MetricsHandler.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	in, out  *prometheus.CounterVec
	dur      *prometheus.HistogramVec
	fsync    prometheus.Histogram
	started  time.Time

	// PUT and multipart uploads (up2k's are counted by up2k).
	putNow, putDone, mpNow, mpDone atomic.Int64
	src                            atomic.Pointer[Sources]
}

// New makes the series and starts timing the store's fsyncs.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), started: time.Now()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hoard_http_requests_total", Help: "HTTP requests answered, by route and status."}, []string{"route", "code"})
	m.in = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hoard_http_request_body_bytes_total", Help: "Request body bytes read, by route."}, []string{"route"})
	m.out = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hoard_http_response_body_bytes_total", Help: "Response body bytes sent, by route."}, []string{"route"})
	m.dur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hoard_http_request_duration_seconds", Help: "How long requests took, by route.", Buckets: []float64{.001, .005, .025, .1, .5, 2.5, 10, 60, 300}}, []string{"route"})
	m.fsync = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hoard_fsync_duration_seconds", Help: "How long each fsync or fdatasync of an upload's file or folder took.", Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1, 5}})
	m.reg.MustRegister(m.requests, m.in, m.out, m.dur, m.fsync, (*scrape)(m),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every route starts at zero, so a scrape before and after a
	// workload compares like with like.
	for _, r := range srvhttp.Routes {
		m.in.WithLabelValues(r)
		m.out.WithLabelValues(r)
	}
	store.ObserveFsync(func(d time.Duration) { m.fsync.Observe(d.Seconds()) })
	return m
}

// Watch sets what the scrape-time series read.
func (m *Metrics) Watch(s Sources) { m.src.Store(&s) }

// Close stops timing fsyncs.
func (m *Metrics) Close() error {
	store.ObserveFsync(nil)
	return nil
}

// Request implements http.Observer.
func (m *Metrics) Request(route string, status int, in, out int64, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.in.WithLabelValues(route).Add(float64(in))
	m.out.WithLabelValues(route).Add(float64(out))
	m.dur.WithLabelValues(route).Observe(d.Seconds())
}

// Upload implements http.Observer.
func (m *Metrics) Upload(kind string, delta int, done bool) {
	now, fin := &m.putNow, &m.putDone
	if kind == "multipart" {
		now, fin = &m.mpNow, &m.mpDone
	}
	now.Add(int64(delta))
	if done {
		fin.Add(1)
	}
}

// ServeMetrics implements http.MetricsHandler: the series of vols and the
// server's own, as Prometheus text or, when asked, OpenMetrics.
func (m *Metrics) ServeMetrics(w http.ResponseWriter, r *http.Request, vols []*store.Volume) {
	allowed := map[string]bool{}
	for _, v := range vols {
		allowed[volLabel(v)] = true
	}
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		fams, err := m.reg.Gather()
		return onlyVolumes(fams, allowed), err
	})
	promhttp.HandlerFor(g, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}

// onlyVolumes drops the series labelled with a volume not in allowed.
func onlyVolumes(fams []*dto.MetricFamily, allowed map[string]bool) []*dto.MetricFamily {
	out := fams[:0]
	for _, f := range fams {
		ms := f.Metric[:0]
	metric:
		for _, mt := range f.Metric {
			for _, l := range mt.Label {
				if l.GetName() == "volume" && !allowed[l.GetValue()] {
					continue metric
				}
			}
			ms = append(ms, mt)
		}
		f.Metric = ms
		if len(ms) > 0 {
			out = append(out, f)
		}
	}
	return out
}

func volLabel(v *store.Volume) string { return "/" + v.VPath }

// scrape is the collector of the series read at each scrape.
type scrape Metrics

var (
	dUpNow     = prometheus.NewDesc("hoard_uploads_in_progress", "Uploads being received: PUT and multipart files in flight, up2k uploads with an unfinished session.", []string{"kind"}, nil)
	dUpDone    = prometheus.NewDesc("hoard_uploads_finished_total", "Uploads stored since start.", []string{"kind"}, nil)
	dBadChunk  = prometheus.NewDesc("hoard_up2k_chunk_verify_failures_total", "up2k chunks refused because their bytes did not match their hash.", nil, nil)
	dChunkPost = prometheus.NewDesc("hoard_up2k_chunk_posts_in_progress", "up2k chunk posts being received.", nil, nil)
	dFree      = prometheus.NewDesc("hoard_volume_free_bytes", "Bytes free to an unprivileged user on the volume's file system.", []string{"volume"}, nil)
	dIdxFiles  = prometheus.NewDesc("hoard_index_files", "Files in the volume's index.", []string{"volume"}, nil)
	dScanning  = prometheus.NewDesc("hoard_index_scanning", "1 while the volume is being scanned.", []string{"volume"}, nil)
	dScanFiles = prometheus.NewDesc("hoard_index_scan_files", "Files the running (or last) scan of the volume saw.", []string{"volume"}, nil)
	dScanBytes = prometheus.NewDesc("hoard_index_scan_bytes", "Bytes of the files the running (or last) scan of the volume saw.", []string{"volume"}, nil)
	dThQueue   = prometheus.NewDesc("hoard_thumb_queue_length", "Thumbnail and transcode jobs waiting for a worker.", nil, nil)
	dThBusy    = prometheus.NewDesc("hoard_thumb_workers_busy", "Thumbnail and transcode workers converting.", nil, nil)
	dDownloads = prometheus.NewDesc("hoard_downloads_active", "Downloads (files, archives, ?tail) being sent.", nil, nil)
)

func (c *scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dUpNow, dUpDone, dBadChunk, dChunkPost, dFree, dIdxFiles, dScanning, dScanFiles, dScanBytes, dThQueue, dThBusy, dDownloads} {
		ch <- d
	}
}

func (c *scrape) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(dUpNow, float64(c.putNow.Load()), "put")
	gauge(dUpNow, float64(c.mpNow.Load()), "multipart")
	counter(dUpDone, float64(c.putDone.Load()), "put")
	counter(dUpDone, float64(c.mpDone.Load()), "multipart")
	src := c.src.Load()
	if src == nil {
		return
	}
	if src.Up2k != nil {
		st := src.Up2k.Stats()
		gauge(dUpNow, float64(st.Unfinished), "up2k")
		counter(dUpDone, float64(st.Finished), "up2k")
		counter(dBadChunk, float64(st.BadChunks))
		gauge(dChunkPost, float64(st.Posts))
	}
	if src.Store != nil {
		for _, v := range src.Store.Volumes() {
			if free, err := v.Free(); err == nil {
				gauge(dFree, float64(free), volLabel(v))
			}
		}
	}
	if src.Index != nil {
		for _, vs := range src.Index.Stats() {
			l := volLabel(vs.Vol)
			if vs.FilesKnown {
				gauge(dIdxFiles, float64(vs.Files), l)
			}
			scanning := 0.0
			if vs.Scanning {
				scanning = 1
			}
			gauge(dScanning, scanning, l)
			gauge(dScanFiles, float64(vs.ScanFiles), l)
			gauge(dScanBytes, float64(vs.ScanBytes), l)
		}
	}
	if src.Media != nil {
		q, busy := src.Media.Stats()
		gauge(dThQueue, float64(q))
		gauge(dThBusy, float64(busy))
	}
	if src.Downloads != nil {
		gauge(dDownloads, float64(src.Downloads()))
	}
}
