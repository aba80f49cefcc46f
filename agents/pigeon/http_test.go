package pigeon

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/server"
)

// prioritizeHTTP posts args to the pigeon-holing route and decodes the answer.
func prioritizeHTTP(t *testing.T, h http.Handler, args extenderv1.ExtenderArgs) extenderv1.HostPriorityList {
	t.Helper()
	body, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/scheduler/priorities/"+PriorityPigeonHoling, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var out extenderv1.HostPriorityList
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHTTPBothRequestForms serves the agent through package server and checks that a request
// carrying full Node objects and one carrying NodeNames (resolved by the lookup) get the same
// answer, with and without cluster access. The cluster is handCluster's: LOAD_BALANCE scores
// A 10, B 1, C 0 (pod does not fit), D 7 (worked in TestLoadBalanceHandWorked).
func TestHTTPBothRequestForms(t *testing.T) {
	nodes := handCluster()
	cache := &fakeCluster{synced: true, nodes: nodes, allocated: map[string]framework.Amounts{
		"A": {corev1.ResourceCPU: 200}, "B": {corev1.ResourceCPU: 500}, "C": {corev1.ResourceCPU: 950}, "D": {corev1.ResourceCPU: 300},
	}}
	want := extenderv1.HostPriorityList{{Host: "A", Score: 10}, {Host: "B", Score: 1}, {Host: "C", Score: 0}, {Host: "D", Score: 7}}
	log := logrus.New()
	log.SetOutput(io.Discard)
	for _, tc := range []struct {
		name    string
		cluster framework.Cluster // the agent's; nil: usage from the annotations
	}{
		{name: "without cluster access"},
		{name: "with cluster access", cluster: cache},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := server.New([]framework.Agent{newAgent(t, config(1, LoadBalance), tc.cluster)},
				server.Options{Lookup: cache, Log: log})
			if err != nil {
				t.Fatal(err)
			}
			p := cpuPod("p", 100)
			list := &corev1.NodeList{}
			names := []string{}
			for _, n := range nodes {
				list.Items = append(list.Items, *n)
				names = append(names, n.Name)
			}
			full := prioritizeHTTP(t, h, extenderv1.ExtenderArgs{Pod: p, Nodes: list})
			byName := prioritizeHTTP(t, h, extenderv1.ExtenderArgs{Pod: p, NodeNames: &names})
			if diff := cmp.Diff(want, full); diff != "" {
				t.Errorf("full nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(full, byName); diff != "" {
				t.Errorf("node names differ from full nodes (-full +names):\n%s", diff)
			}
		})
	}
}
