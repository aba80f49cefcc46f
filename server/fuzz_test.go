package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// FuzzServe sends arbitrary bodies to the filter and prioritize routes, in both request forms,
// and checks the contract: never a 500 from well-behaved agents, only 200/400/413, and a 200
// answer that accounts for every input node exactly once (filter) or scores each input node
// once in [0, 10] (prioritize). Fields that no agent reads are skipped, not type-checked, so a
// body that encoding/json rejects only for such a field may get a 200; it must be valid JSON.
//
// make test runs it briefly; for a long run: go test -run '^$' -fuzz FuzzServe -fuzztime 10m ./server
func FuzzServe(f *testing.F) {
	nodes := sampleNodes()
	for _, args := range []extenderv1.ExtenderArgs{fullArgs(nodes), nameArgs("a", "b", "ghost"), nameArgs()} {
		b, _ := json.Marshal(args)
		f.Add(b, false)
		f.Add(b, true)
	}
	for _, s := range []string{`{"Pod":{},"Nodes":{"items":[{"metadata":{"name":"x"}}]}}`, `{"Pod":null}`, `[]`, `{"Pod":{},"NodeNames":[1]}`, "\x00"} {
		f.Add([]byte(s), false)
	}
	fx := newFixture(f, Options{Lookup: nodesLookup(nodes), MaxBodyBytes: 1 << 20})
	f.Fuzz(func(t *testing.T, body []byte, prioritize bool) {
		path := "/scheduler/predicates/label"
		if prioritize {
			path = "/scheduler/priorities/label"
		}
		fx.t = t
		rec := fx.do(http.MethodPost, path, "application/json", bytes.NewReader(body))
		switch rec.Code {
		case 200, 400, 413:
		default:
			t.Fatalf("status %d for body %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code != 200 {
			return
		}
		var args extenderv1.ExtenderArgs
		if err := json.Unmarshal(body, &args); err != nil {
			// The lean decoder does not type-check fields no agent reads (a list's metadata,
			// a node's images): such a body may be served, but it must be valid JSON.
			if !json.Valid(body) {
				t.Fatalf("answered 200 to invalid JSON %q", body)
			}
			return
		}
		var input []string
		if args.Nodes != nil {
			for _, n := range args.Nodes.Items {
				input = append(input, n.Name)
			}
		} else if args.NodeNames != nil {
			input = *args.NodeNames
		}
		if prioritize {
			var list extenderv1.HostPriorityList
			if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
				t.Fatalf("answer does not decode: %v", err)
			}
			if len(list) != len(input) {
				t.Fatalf("%d scores for %d nodes", len(list), len(input))
			}
			for i, hp := range list {
				if hp.Host != input[i] || hp.Score < 0 || hp.Score > 10 {
					t.Fatalf("entry %d = %+v for input %q", i, hp, input[i])
				}
			}
			return
		}
		var res extenderv1.ExtenderFilterResult
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatalf("answer does not decode: %v", err)
		}
		seen := map[string]int{}
		if res.Nodes != nil {
			for _, n := range res.Nodes.Items {
				seen[n.Name]++
			}
		}
		if res.NodeNames != nil {
			for _, n := range *res.NodeNames {
				seen[n]++
			}
		}
		for n := range res.FailedNodes {
			seen[n]++
		}
		for n := range res.FailedAndUnresolvableNodes {
			seen[n]++
		}
		want := map[string]int{}
		for _, n := range input {
			want[n]++
		}
		// A name listed twice in the input may be rejected once (a map key); it passes twice.
		for n, c := range want {
			if seen[n] == 0 || seen[n] > c {
				t.Fatalf("node %q appears %d times in the answer, %d in the input: %s", n, seen[n], c, rec.Body)
			}
		}
		for n := range seen {
			if want[n] == 0 {
				t.Fatalf("answer names %q, which was not in the input", n)
			}
		}
	})
}
