package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestOnlyVolumes: series labelled with a volume the reader does not
// administer are dropped, whole families when nothing is left, and
// series without a volume label are kept.
func TestOnlyVolumes(t *testing.T) {
	fam := func(name string, vols ...string) *dto.MetricFamily {
		f := &dto.MetricFamily{Name: ptr(name)}
		for _, v := range vols {
			m := &dto.Metric{}
			if v != "" {
				m.Label = []*dto.LabelPair{{Name: ptr("volume"), Value: ptr(v)}}
			}
			f.Metric = append(f.Metric, m)
		}
		return f
	}
	fams := []*dto.MetricFamily{fam("free", "/", "/priv", "/a"), fam("secret", "/priv"), fam("global", "")}
	out := onlyVolumes(fams, map[string]bool{"/": true, "/a": true})
	var got []string
	for _, f := range out {
		for _, m := range f.Metric {
			v := ""
			for _, l := range m.Label {
				v = l.GetValue()
			}
			got = append(got, f.GetName()+v)
		}
	}
	if strings.Join(got, " ") != "free/ free/a global" {
		t.Fatalf("kept %v", got)
	}
}

// TestObserverCounts: what the observer hears is what a scrape shows,
// with no volume allowed (none of the per-volume series).
func TestObserverCounts(t *testing.T) {
	m := New()
	defer m.Close()
	m.Request("put", 201, 10, 5, time.Millisecond)
	m.Request("put", 201, 7, 5, time.Millisecond)
	m.Upload("put", 1, false)
	m.Upload("put", -1, true)
	m.Upload("multipart", 1, false)
	rec := httptest.NewRecorder()
	m.ServeMetrics(rec, httptest.NewRequest(http.MethodGet, "/.cpr/metrics", nil), nil)
	body := rec.Body.String()
	for _, want := range []string{
		`hoard_http_requests_total{code="201",route="put"} 2`,
		`hoard_http_request_body_bytes_total{route="put"} 17`,
		`hoard_http_response_body_bytes_total{route="get"} 0`,
		`hoard_uploads_finished_total{kind="put"} 1`,
		`hoard_uploads_in_progress{kind="multipart"} 1`,
		`hoard_uploads_in_progress{kind="put"} 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("scrape lacks %q", want)
		}
	}
}

func ptr(s string) *string { return &s }
