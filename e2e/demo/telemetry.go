package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// demoPolicy is a Telemetry Aware Scheduling policy, as its users write them: no new pods where
// node_cpu is above 90, the lowest node_cpu preferred, nodes above 85 labelled for the
// descheduler.
const demoPolicy = `
apiVersion: telemetry.intel.com/v1alpha1
kind: TASPolicy
metadata:
  name: demo-policy
  namespace: default
spec:
  strategies:
    dontschedule:
      rules:
      - {metricname: node_cpu, operator: GreaterThan, target: 90}
    scheduleonmetric:
      rules:
      - {metricname: node_cpu, operator: LessThan}
    deschedule:
      rules:
      - {metricname: node_cpu, operator: GreaterThan, target: 85}
`

// nodeCPU is each demo node's node_cpu, as the custom metrics API serves it (node-4 is hot).
var nodeCPU = map[string]float64{"node-1": 35, "node-2": 60, "node-3": 50, "node-4": 97, "node-5": 20, "node-6": 15}

// setupTelemetry installs what the telemetry sidecar reads: the TASPolicy CRD and a policy,
// the sidecar's permissions (the RBAC objects of yamlfiles/extender.telemetry.yaml), and a
// custom metrics API server behind the API server's aggregation layer.
func setupTelemetry(s *harness.Session, c *harness.Cluster, root string) {
	c.ApplyFile(s, filepath.Join(root, "yamlfiles", "telemetry-policy-crd.yaml"), false)
	data, err := os.ReadFile(filepath.Join(root, "yamlfiles", "extender.telemetry.yaml"))
	if err != nil {
		s.Fatalf("%v", err)
	}
	objs, err := harness.ReadObjects(data)
	if err != nil {
		s.Fatalf("extender.telemetry.yaml: %v", err)
	}
	for _, o := range objs {
		if o.GetAPIVersion() != "rbac.authorization.k8s.io/v1" {
			continue
		}
		b, err := json.Marshal(o.Object)
		if err != nil {
			s.Fatalf("%v", err)
		}
		c.Apply(s, b, false)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := c.Client.Discovery().ServerResourcesForGroupVersion("telemetry.intel.com/v1alpha1"); err == nil {
			break
		} else if time.Now().After(deadline) {
			s.Fatalf("the TASPolicy CRD is not served: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.Apply(s, []byte(demoPolicy), false)
	cm := c.StartCustomMetrics(s)
	for n, v := range nodeCPU {
		cm.Set("node_cpu", n, v)
	}
}

// telemetryNotes waits (at most 30 s) for the deschedule label on the hot node and returns
// lines saying which nodes carry it.
func telemetryNotes(s *harness.Session, c *harness.Cluster) []string {
	deadline := time.Now().Add(30 * time.Second)
	for {
		nodes, err := c.Client.CoreV1().Nodes().List(s.Context(), metav1.ListOptions{LabelSelector: "demo-policy=violating"})
		if err == nil && (len(nodes.Items) > 0 || time.Now().After(deadline)) {
			var names []string
			for _, n := range nodes.Items {
				names = append(names, n.Name)
			}
			sort.Strings(names)
			if len(names) == 0 {
				return []string{"no node is labelled demo-policy=violating yet"}
			}
			return []string{fmt.Sprintf("telemetry deschedule labels %v demo-policy=violating (node_cpu above 85, held 4 s)", names)}
		}
		if time.Now().After(deadline) {
			s.Fatalf("listing nodes: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
