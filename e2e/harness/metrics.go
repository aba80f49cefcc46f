package harness

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sample is one labelled sample of a Prometheus text exposition: the metric's name, the text
// between its braces and its value.
type Sample struct {
	Name, Labels string
	Value        float64
}

// Label returns the value of label name of the sample, "" when it has none.
func (s Sample) Label(name string) string { return LabelValue(s.Labels, name) }

// Samples are a /metrics page's labelled samples.
type Samples []Sample

// Sum adds the values of the samples of metric name by key(sample) (samples for which key
// returns "", skipped).
func (ss Samples) Sum(name string, key func(Sample) string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range ss {
		if s.Name != name {
			continue
		}
		if k := key(s); k != "" {
			out[k] += s.Value
		}
	}
	return out
}

// SchedulerMetrics reads the labelled samples of the /metrics of the kube-scheduler whose
// secure port on 127.0.0.1 is port (its certificate is self-signed: not verified, on loopback;
// the scheduler must allow the path anonymously: --authorization-always-allow-paths).
func SchedulerMetrics(port int) (Samples, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the scheduler's self-signed certificate, on loopback
	}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", port))
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading /metrics: %s", resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	return ParseSamples(string(body))
}

// ParseSamples returns the labelled samples of a Prometheus text exposition (comments and
// samples without labels are skipped); a labelled sample whose value is not a number is an
// error naming it.
func ParseSamples(body string) (Samples, error) {
	var out Samples
	for _, line := range strings.Split(body, "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			return nil, fmt.Errorf("/metrics: %q: no value after the labels", line)
		}
		value, _, _ = strings.Cut(strings.TrimSpace(value), " ") // a timestamp may follow
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics: %q: %w", line, err)
		}
		out = append(out, Sample{Name: name, Labels: labels, Value: v})
	}
	return out, nil
}
