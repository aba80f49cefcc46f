// Command generate writes every file that names the agents or describes their settings, from
// the code (package internal/deploygen/generate): the extender's build-tagged files, the
// Dockerfiles, the tables of README.md and docs/plugin-mode.md, and the chart's agent table,
// values entries, values schema and alert. make generate runs it (then make yamlfiles); make
// chart runs it with -chart, the chart's files only.
//
// It lives in hack/ with the other developer tools (hack/install-prometheus.sh): it is run from
// a checkout and never shipped, unlike the programs of cmd/. The tests of agents/ and charts/
// compute the same files in memory and fail, naming the file and make generate, when a
// committed one differs.
//
//	go run ./hack/generate [-root .] [-chart]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kube-safe-scheduler/extender/internal/deploygen/generate"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	chartOnly := flag.Bool("chart", false, "only the chart's files (make chart)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "generate: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	plan, err := generate.All(*root)
	if *chartOnly {
		plan, err = generate.Chart(*root)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "generate: %v\n", err)
		os.Exit(1)
	}
	changed, err := plan.Apply(*root)
	for _, f := range changed {
		fmt.Println("wrote", f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "generate: %v\n", err)
		os.Exit(1)
	}
}
