package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// request is one class of the pods' requests: the container's cpu and memory.
type request struct {
	cpu, memory string
}

func (r request) String() string { return r.cpu + "/" + r.memory }

// defaultRequests is what every pod requested before -requests existed, and still does by
// default.
const defaultRequests = "100m/128Mi"

// mixedRequests is what -requests mixed stands for: four classes as a cluster's workloads
// request them (a small service, a medium one, a large one, a batch worker), the classes of
// safe's in-process benchmark (agents/safe/cycle_bench_test.go, "mixed").
const mixedRequests = "250m/512Mi,500m/1Gi,1/2Gi,2/4Gi"

// requestsHelp is -requests' help text.
const requestsHelp = `the pods' requests, as comma-separated classes cpu/memory (Kubernetes quantities, both above 0); ` +
	`pod i of every mode requests class i modulo their number, so every mode is given the same pods. "mixed" is ` +
	mixedRequests + ` (four classes as a cluster's workloads would request)`

// parseRequests reads -requests: "mixed", or classes "cpu/memory,...".
func parseRequests(s string) ([]request, error) {
	if strings.TrimSpace(s) == "mixed" {
		s = mixedRequests
	}
	var out []request
	for _, class := range strings.Split(s, ",") {
		class = strings.TrimSpace(class)
		cpu, memory, ok := strings.Cut(class, "/")
		if !ok || strings.Contains(memory, "/") {
			return nil, fmt.Errorf("-requests: %q is not cpu/memory (for example 500m/1Gi)", class)
		}
		r := request{strings.TrimSpace(cpu), strings.TrimSpace(memory)}
		for _, q := range []struct{ name, value string }{{"cpu", r.cpu}, {"memory", r.memory}} {
			v, err := resource.ParseQuantity(q.value)
			if err != nil {
				return nil, fmt.Errorf("-requests: %q: %s %q is not a quantity: %v", class, q.name, q.value, err)
			}
			if v.Sign() <= 0 {
				return nil, fmt.Errorf("-requests: %q: %s %q must be above 0", class, q.name, q.value)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// requestOf returns pod i's class: the classes in turn.
func requestOf(classes []request, i int) request { return classes[i%len(classes)] }
