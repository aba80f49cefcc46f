package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runWith(env map[string]string, args ...string) (int, string) {
	var out bytes.Buffer
	code := run(context.Background(), args, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &out)
	return code, out.String()
}

func TestHelp(t *testing.T) {
	code, out := runWith(nil, "--help")
	if code != 0 {
		t.Errorf("--help exited %d", code)
	}
	for _, s := range []string{"STATS_SOURCE", "STATS_WINDOW", "PROMETHEUS_URL", "KUBECONFIG", "KUBE_API_QPS", "PATCH_QPS",
		"USAGE_LEARNER", "USAGE_PERCENTILE", "USAGE_MIN_OBSERVATIONS", "USAGE_INTERVAL"} {
		if !strings.Contains(out, s) {
			t.Errorf("--help does not mention %s", s)
		}
	}
}

// Bad settings stop the program at start, naming the variable.
func TestBadSettings(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"INTERVAL": "soon"}, "INTERVAL"},
		{map[string]string{"STATS_SOURCE": "graphite"}, "STATS_SOURCE"},
		{map[string]string{"STATS_SOURCE": "prometheus"}, "PROMETHEUS_URL"},
		{map[string]string{"KUBECONFIG": "/nonexistent/kubeconfig"}, "KUBECONFIG"},
		// The usage learner: its settings, and a source to learn from.
		{map[string]string{"USAGE_LEARNER": "true"}, "USAGE_LEARNER (or --usage-learner) needs STATS_SOURCE"},
		{map[string]string{"USAGE_PERCENTILE": "101"}, "USAGE_PERCENTILE"},
		{map[string]string{"USAGE_PERCENTILE": "1.5"}, "USAGE_PERCENTILE"}, // neither a percent nor the old fraction
		{map[string]string{"USAGE_MIN_OBSERVATIONS": "0"}, "USAGE_MIN_OBSERVATIONS"},
		{map[string]string{"USAGE_INTERVAL": "often"}, "USAGE_INTERVAL"},
		{map[string]string{"USAGE_OBJECT": "Bad_Name"}, "USAGE_OBJECT"},
		// No kubeconfig and not in a pod: the annotator cannot work without the cluster.
		{map[string]string{"KUBERNETES_SERVICE_HOST": ""}, "needs cluster access"},
		{map[string]string{"CLUSTER_ACCESS": "none"}, "needs cluster access"},
	}
	for _, c := range cases {
		t.Setenv("KUBERNETES_SERVICE_HOST", "")
		code, out := runWith(c.env)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q; want 2 naming %s", c.env, code, out, c.want)
		}
	}
}
