package tlsreload

import "github.com/prometheus/client_golang/prometheus"

// ExpiryMetricName is the series Collector exports; the operators' alert on a certificate near
// its end (deploy/prometheus) reads it.
const ExpiryMetricName = "extender_tls_certificate_expiry_timestamp_seconds"

// Collector returns a gauge read at every scrape: the NotAfter (Unix time) of the certificate
// currently served, so that it follows rotations without anyone updating it.
func (r *Reloader) Collector() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: ExpiryMetricName,
		Help: "When the serving certificate currently in use expires (its NotAfter, Unix time); follows reloads.",
	}, func() float64 { return float64(r.Certificate().NotAfter.Unix()) })
}
