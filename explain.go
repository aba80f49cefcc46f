package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
	"github.com/kube-safe-scheduler/extender/internal/tlsreload"
)

// cycleWindow groups the decisions of one scheduling cycle: kube-scheduler calls every
// extender of a pod's cycle one after another (filters) or together (prioritizers), each
// within its httpTimeout (5 s by default).
const cycleWindow = 10 * time.Second

// explainDecision is one decision of GET /debug/decisions or /configz (package
// framework/decisions), and the URL it was read from.
type explainDecision struct {
	framework.DecisionJSON
	url string
}

// explain prints, for the last scheduling cycle of a pod, every node's verdicts and scores from
// the extenders at --url, the weighted sum and what each agent saw (docs/operations.md).
func explain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("extender explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var urls []string
	fs.Func("url", "base URL of an extender (repeat, or separate with commas, for one sidecar per agent); default http://127.0.0.1:5401", func(s string) error {
		for _, u := range strings.Split(s, ",") {
			if u = strings.TrimSpace(u); u != "" {
				urls = append(urls, strings.TrimSuffix(u, "/"))
			}
		}
		return nil
	})
	var schedulers []string
	fs.Func("scheduler", "base URL of a kube-safe-scheduler's secure port (plugin mode, started with DECISIONS_KEPT > 0), e.g. https://127.0.0.1:10259: its decisions are read from /configz", func(s string) error {
		if s = strings.TrimSpace(s); s != "" {
			schedulers = append(schedulers, strings.TrimSuffix(s, "/"))
		}
		return nil
	})
	tokenFile := fs.String("token-file", "", "file holding a bearer token to present to --scheduler (one allowed to get the non-resource URL /configz); or use --cert-file")
	weightsFlag := fs.String("weights", "", "the scheduler configuration's weights by prioritize verb, e.g. safe-overload=2,pigeon-holing=2 (default 1 each)")
	caFile := fs.String("ca-file", "", "PEM CA bundle to verify an https extender with (default: the system roots)")
	certFile := fs.String("cert-file", "", "PEM client certificate to present (mutual TLS: /debug/decisions is served to a verified client)")
	keyFile := fs.String("key-file", "", "PEM key of --cert-file")
	insecure := fs.Bool("insecure-skip-verify", false, "do not verify an https server's certificate (e.g. a kube-scheduler's self-signed one)")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for each extender")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: extender explain [NAMESPACE/]POD [flags] (flags before or after POD)\n\n"+
			"Prints the last scheduling cycle of POD as the extenders at --url kept it (GET /debug/decisions):\n"+
			"each node's verdicts and scores, the weighted sum, and what each agent saw of it.\n"+
			"In plugin mode give --scheduler: kube-safe-scheduler started with DECISIONS_KEPT > 0 publishes its plugins'\n"+
			"decisions under /configz, behind kube-scheduler's own authentication and authorization.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	// Flags may come before or after the pod (docs/operations.md puts them after).
	pods, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(pods) != 1 {
		got := ""
		if len(pods) > 1 {
			got = fmt.Sprintf("; got %d: %s", len(pods), strings.Join(pods, " "))
		}
		fmt.Fprintf(stderr, "extender explain: give exactly one pod, as NAMESPACE/NAME or NAME (in default)%s\n", got)
		return 2
	}
	pod := pods[0]
	if !strings.Contains(pod, "/") {
		pod = "default/" + pod
	}
	if len(urls) == 0 && len(schedulers) == 0 {
		urls = []string{"http://127.0.0.1:5401"}
	}
	var token string
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			fmt.Fprintf(stderr, "extender explain: --token-file: %v\n", err)
			return 2
		}
		token = strings.TrimSpace(string(b))
	}
	weights, err := parseWeights(*weightsFlag)
	if err != nil {
		fmt.Fprintf(stderr, "extender explain: --weights: %v\n", err)
		return 2
	}
	transport := &http.Transport{}
	if *caFile != "" || *certFile != "" || *keyFile != "" || slicesHasHTTPS(urls) || len(schedulers) > 0 {
		c, err := tlsreload.ClientConfig(*caFile, *certFile, *keyFile)
		if err != nil {
			fmt.Fprintf(stderr, "extender explain: %v\n", err)
			return 2
		}
		c.InsecureSkipVerify = *insecure
		transport.TLSClientConfig = c
	}
	client := &http.Client{Transport: transport, Timeout: *timeout}
	var all []explainDecision
	for _, u := range urls {
		got, err := fetchDecisions(ctx, client, u, pod)
		if err != nil {
			fmt.Fprintf(stderr, "extender explain: %v\n", err)
			return 1
		}
		all = append(all, got...)
	}
	for _, u := range schedulers {
		got, err := fetchSchedulerDecisions(ctx, client, u, pod, token)
		if err != nil {
			fmt.Fprintf(stderr, "extender explain: %v\n", err)
			return 1
		}
		all = append(all, got...)
	}
	cycle := lastCycle(all)
	if len(cycle) == 0 {
		fmt.Fprintf(stderr, "extender explain: no decision about %s is kept at %s (an extender or kube-safe-scheduler keeps its last DECISIONS_KEPT decisions)\n",
			pod, strings.Join(append(urls, schedulers...), ", "))
		return 1
	}
	printExplanation(stdout, pod, cycle, weights)
	return 0
}

func slicesHasHTTPS(urls []string) bool {
	for _, u := range urls {
		if strings.HasPrefix(u, "https://") {
			return true
		}
	}
	return false
}

// parseWeights reads "verb=weight,...".
func parseWeights(s string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, w, ok := strings.Cut(part, "=")
		n, err := strconv.ParseInt(strings.TrimSpace(w), 10, 64)
		if !ok || strings.TrimSpace(name) == "" || err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not function=weight with a weight of 1 or more", part)
		}
		out[strings.TrimPrefix(strings.TrimSpace(name), "priorities/")] = n
	}
	return out, nil
}

// get reads base+path (with a bearer token, if any), at most limit bytes of its body; the
// response's body is read and closed.
func get(ctx context.Context, client *http.Client, base, path, token string, limit int64) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", base, err)
	}
	return resp, body, nil
}

// fetchDecisions reads the decisions the extender at base keeps about pod.
func fetchDecisions(ctx context.Context, client *http.Client, base, pod string) ([]explainDecision, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--url %q is not an http or https URL", base)
	}
	resp, body, err := get(ctx, client, base, "/debug/decisions?pod="+url.QueryEscape(pod), "", 64<<20)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusForbidden && strings.Contains(string(body), "/debug/decisions is served only"):
		// The extender's own refusal: it names what it needs (loopback or a client certificate).
		return nil, fmt.Errorf("%s/debug/decisions: %s %s", base, resp.Status, strings.TrimSpace(string(body)))
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%s answers %s for /debug/decisions: it is not an extender keeping decisions "+
			"(for kube-safe-scheduler, plugin mode, give --scheduler; or decisions are off, DECISIONS_KEPT=0; "+
			"the pod's events, kubectl describe pod %s, say why it is pending)", base, resp.Status, pod)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s/debug/decisions: %s %s", base, resp.Status, strings.TrimSpace(string(body)))
	}
	var out struct {
		Decisions []explainDecision `json:"decisions"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("%s/debug/decisions: %w", base, err)
	}
	for i := range out.Decisions {
		out.Decisions[i].url = base
	}
	return out.Decisions, nil
}

// fetchSchedulerDecisions reads the decisions a kube-safe-scheduler at base keeps about pod from
// its /configz (the same JSON as an extender's /debug/decisions).
func fetchSchedulerDecisions(ctx context.Context, client *http.Client, base, pod, token string) ([]explainDecision, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("--scheduler %q is not an https URL (kube-scheduler serves its secure port only)", base)
	}
	resp, body, err := get(ctx, client, base, "/configz", token, 256<<20)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%s/configz: %s: present credentials (--cert-file and --key-file, or --token-file) of a user "+
			"allowed to get the non-resource URL /configz, and start the scheduler with --authentication-kubeconfig and "+
			"--authorization-kubeconfig", base, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s/configz: %s %s", base, resp.Status, strings.TrimSpace(string(body)))
	}
	var configs map[string]json.RawMessage
	if err := json.Unmarshal(body, &configs); err != nil {
		return nil, fmt.Errorf("%s/configz: %w", base, err)
	}
	raw, ok := configs[decisions.ConfigzKey]
	if !ok {
		return nil, fmt.Errorf("%s keeps no decisions: it is not kube-safe-scheduler, or it runs without DECISIONS_KEPT (set it > 0)", base)
	}
	var out struct {
		Decisions []explainDecision `json:"decisions"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s/configz %s: %w", base, decisions.ConfigzKey, err)
	}
	var mine []explainDecision
	for _, d := range out.Decisions {
		if d.Pod == pod {
			d.url = base
			mine = append(mine, d)
		}
	}
	return mine, nil
}

// lastCycle returns, from decisions about one pod (newest first per extender), the newest
// decision of each function and verb made within cycleWindow of the newest of all: the pod's
// last scheduling cycle. Filters first, then prioritizers, each in the order of the URLs.
func lastCycle(all []explainDecision) []explainDecision {
	var newest time.Time
	for _, d := range all {
		if d.Time.After(newest) {
			newest = d.Time
		}
	}
	seen := map[string]bool{}
	var out []explainDecision
	for _, d := range all {
		k := d.url + " " + d.Verb + " " + d.Function
		if seen[k] || newest.Sub(d.Time) > cycleWindow {
			continue
		}
		// all is newest first per extender: the first of a key is its newest.
		seen[k] = true
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Verb == "filter" && out[j].Verb != "filter" })
	return out
}

// printExplanation prints the node table, the rejections' reasons and the agents' inputs.
func printExplanation(w io.Writer, pod string, cycle []explainDecision, weights map[string]int64) {
	type row struct {
		node   string
		cells  []string
		sum    int64
		passes bool
	}
	rows := map[string]*row{}
	var order []string
	get := func(n string) *row {
		r, ok := rows[n]
		if !ok {
			r = &row{node: n, cells: make([]string, len(cycle)), passes: true}
			rows[n] = r
			order = append(order, n)
		}
		return r
	}
	var reasons, inputs []string
	for i, d := range cycle {
		for _, n := range d.Nodes {
			r := get(n.Node)
			switch {
			case d.Verb == "filter":
				r.cells[i] = n.Verdict
				if n.Verdict != "pass" {
					r.passes = false
					reasons = append(reasons, fmt.Sprintf("  %s: %s %s: %s", n.Node, d.Function, n.Verdict, n.Reason))
				}
			case n.Score != nil:
				r.cells[i] = strconv.FormatInt(*n.Score, 10)
				r.sum += weight(weights, d.Function) * *n.Score
			}
			if len(n.Inputs) > 0 {
				inputs = append(inputs, fmt.Sprintf("  %s\t%s (%s)\t%s", n.Node, d.Function, d.Verb, formatInputs(n.Inputs)))
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := rows[order[i]], rows[order[j]]
		if a.passes != b.passes {
			return a.passes
		}
		if a.sum != b.sum {
			return a.sum > b.sum
		}
		return a.node < b.node
	})

	plural := "s"
	if len(cycle) == 1 {
		plural = ""
	}
	fmt.Fprintf(w, "Pod %s: last scheduling cycle at %s (%d decision%s)\n\n", pod, cycle[len(cycle)-1].Time.Format(time.RFC3339Nano), len(cycle), plural)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "NODE\t"
	for _, d := range cycle {
		if d.Verb == "filter" {
			header += d.Function + " (filter)\t"
		} else {
			header += fmt.Sprintf("%s (w%d)\t", d.Function, weight(weights, d.Function))
		}
	}
	fmt.Fprintln(tw, header+"Σ w·score")
	for _, n := range order {
		r := rows[n]
		line := r.node + "\t"
		for _, c := range r.cells {
			if c == "" {
				c = "-"
			}
			line += c + "\t"
		}
		sum := strconv.FormatInt(r.sum, 10)
		if !r.passes {
			sum = "filtered out"
		}
		fmt.Fprintln(tw, line+sum)
	}
	tw.Flush()
	for _, d := range cycle {
		if d.Error != "" {
			fmt.Fprintf(w, "\n%s (%s) failed: %s\n", d.Function, d.Verb, d.Error)
		}
	}
	fmt.Fprintln(w, "\nkube-scheduler adds 10 × weight × score to its own plugins' scores (0..100 each) and binds the best node.")
	if len(reasons) > 0 {
		fmt.Fprintln(w, "\nRejections:")
		for _, r := range reasons {
			fmt.Fprintln(w, r)
		}
	}
	if len(inputs) > 0 {
		fmt.Fprintln(w, "\nWhat the agents saw:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, l := range inputs {
			fmt.Fprintln(tw, l)
		}
		tw.Flush()
	}
}

func weight(weights map[string]int64, function string) int64 {
	if w, ok := weights[function]; ok {
		return w
	}
	return 1
}

// formatInputs prints an agent's inputs as sorted key=value pairs, nested ones in braces,
// numbers with 4 significant digits.
func formatInputs(in map[string]any) string {
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+formatValue(in[k]))
	}
	return strings.Join(parts, " ")
}

func formatValue(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "{" + formatInputs(v) + "}"
	case float64:
		return strconv.FormatFloat(v, 'g', 4, 64)
	case string:
		if strings.ContainsAny(v, " =") {
			return strconv.Quote(v)
		}
		return v
	default:
		return fmt.Sprint(v)
	}
}
