// The convert-policy subcommand: extender convert-policy turns a legacy Policy file into the v1
// KubeSchedulerConfiguration.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/kube-safe-scheduler/extender/internal/deploygen/schedconfig"
)

// convertPolicy prints the v1 KubeSchedulerConfiguration equivalent of a legacy Policy file and
// reports on stderr what has no v1 equivalent.
func convertPolicy(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("extender convert-policy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: extender convert-policy <policy file, JSON or YAML, or - for stdin>\n\n"+
			"Prints the kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration equivalent of a legacy Policy\n"+
			"(removed in Kubernetes 1.23); what has no v1 equivalent is reported here, with the v1 plugins to use.\n")
	}
	// -h after the file is help too, and an unknown flag is named (flags.go).
	args, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(args) != 1 {
		fs.Usage()
		return 2
	}
	var data []byte
	if args[0] == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(args[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "extender convert-policy: %v\n", err)
		return 1
	}
	out, notes, err := schedconfig.Convert(data)
	for _, n := range notes {
		fmt.Fprintf(stderr, "convert-policy: %s: %s\n", args[0], n)
	}
	if err != nil {
		fmt.Fprintf(stderr, "extender convert-policy: %s: %v\n", args[0], err)
		return 1
	}
	stdout.Write(out)
	return 0
}
