// Package bench holds the benchmarks of every agent function served through the real HTTP
// handler, at 500 and 5000 realistic nodes, in both request forms (full Nodes and NodeNames).
// Run them with make bench, or:
//
//	cd e2e && go test -run '^$' -bench . -benchmem ./bench/agents
package bench
