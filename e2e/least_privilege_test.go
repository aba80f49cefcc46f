package e2e

// Least privilege (issue 49): what the chart and the shipped yamlfiles grant on ConfigMaps,
// Leases and Secrets. Those hold other components' state (coredns' and kube-proxy's
// configuration, the controller-manager's and the default scheduler's Leases, tokens): a grant
// on them without resourceNames reaches objects that are not ours. The rule checked, on the
// chart rendered with every feature on and on every yamlfiles/*.yaml:
//   - a ClusterRole (cluster-wide) never grants them, even by name: a name granted in every
//     namespace reaches another component's object of that name (system:kube-scheduler's
//     Lease kube-scheduler is the default scheduler's, in kube-system);
//   - a Role grants them without resourceNames only in the release's own namespace, and only
//     when that namespace is not shared (kube-system, kube-public, kube-node-lease, default:
//     kss.sharedNamespaces); so every Role of the yamlfiles (kube-system) names its objects;
//   - a binding to a role the render does not define (a built-in, as system:kube-scheduler or
//     extension-apiserver-authentication-reader) is judged by that role's rules as the real API
//     server defines them, at the binding's scope.
// create cannot be restricted by name in RBAC: a rule granting create on them counts as one
// without resourceNames, so the chart creates the objects its components write, and grants get
// and update on them by name. LeaseCandidates (coordinated leader election) count as Leases.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// sharedNamespaces are the namespaces of other components (the chart's kss.sharedNamespaces).
var sharedNamespaces = []string{"kube-system", "kube-public", "kube-node-lease", "default"}

// sensitive reports whether a rule reaches ConfigMaps, Leases or Secrets (wildcards included).
func sensitive(r rbacv1.PolicyRule) bool {
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			switch {
			case res == "*" && (g == "*" || g == "" || g == "coordination.k8s.io"):
				return true
			case (g == "" || g == "*") && (res == "configmaps" || res == "secrets"):
				return true
			case (g == "coordination.k8s.io" || g == "*") && (res == "leases" || res == "leasecandidates"):
				return true
			}
		}
	}
	return false
}

// grants are the RBAC objects of a render, by kind/namespace/name.
type grants struct {
	roles        map[string]rbacv1.Role        // namespace/name
	clusterRoles map[string]rbacv1.ClusterRole // name
	bindings     []rbacv1.RoleBinding          // ClusterRoleBindings with an empty namespace
}

func readGrants(t *testing.T, what string, data []byte) grants {
	t.Helper()
	objs, err := harness.ReadObjects(data)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	g := grants{roles: map[string]rbacv1.Role{}, clusterRoles: map[string]rbacv1.ClusterRole{}}
	conv := func(o *unstructured.Unstructured, into any) {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
			t.Fatalf("%s: %s %s: %v", what, o.GetKind(), o.GetName(), err)
		}
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Role":
			var r rbacv1.Role
			conv(o, &r)
			g.roles[r.Namespace+"/"+r.Name] = r
		case "ClusterRole":
			var r rbacv1.ClusterRole
			conv(o, &r)
			g.clusterRoles[r.Name] = r
		case "RoleBinding":
			var b rbacv1.RoleBinding
			conv(o, &b)
			g.bindings = append(g.bindings, b)
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			conv(o, &b)
			g.bindings = append(g.bindings, rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.Name}, RoleRef: b.RoleRef, Subjects: b.Subjects})
		}
	}
	return g
}

// overreach returns the rules of rules that reach ConfigMaps, Leases or Secrets in namespace
// ns ("": every namespace, where even a name is too much) without resourceNames, when owned is
// the namespace the render owns ("": none), as readable lines.
func overreach(rules []rbacv1.PolicyRule, ns, owned string) []string {
	var out []string
	for _, r := range rules {
		if !sensitive(r) || (len(r.ResourceNames) > 0 && ns != "") {
			continue
		}
		if ns == "" {
			out = append(out, fmt.Sprintf("%v %v %v (resourceNames %v) in every namespace", r.Verbs, r.APIGroups, r.Resources, r.ResourceNames))
			continue
		}
		if ns != "" && ns == owned && !slices.Contains(sharedNamespaces, ns) {
			continue // the release's own namespace
		}
		where := "every namespace"
		if ns != "" {
			where = "namespace " + ns
		}
		out = append(out, fmt.Sprintf("%v %v %v without resourceNames in %s", r.Verbs, r.APIGroups, r.Resources, where))
	}
	return out
}

// checkGrants fails on every overreach of g (the render owning namespace owned), reading the
// roles g binds but does not define from the cluster.
func checkGrants(t *testing.T, c *harness.Cluster, what string, g grants, owned string) {
	t.Helper()
	for _, r := range g.clusterRoles {
		for _, o := range overreach(r.Rules, "", owned) {
			t.Errorf("%s: ClusterRole %s grants %s", what, r.Name, o)
		}
	}
	for _, r := range g.roles {
		for _, o := range overreach(r.Rules, r.Namespace, owned) {
			t.Errorf("%s: Role %s/%s grants %s", what, r.Namespace, r.Name, o)
		}
	}
	for _, b := range g.bindings {
		scope := b.Namespace // "" for a ClusterRoleBinding: every namespace
		var rules []rbacv1.PolicyRule
		switch b.RoleRef.Kind {
		case "ClusterRole":
			if _, ours := g.clusterRoles[b.RoleRef.Name]; ours {
				if scope == "" {
					continue // checked above
				}
				rules = g.clusterRoles[b.RoleRef.Name].Rules
			} else {
				r, err := c.Client.RbacV1().ClusterRoles().Get(t.Context(), b.RoleRef.Name, metav1.GetOptions{})
				if err != nil {
					t.Errorf("%s: binding %s: ClusterRole %s: %v", what, b.Name, b.RoleRef.Name, err)
					continue
				}
				rules = r.Rules
			}
		case "Role":
			if _, ours := g.roles[scope+"/"+b.RoleRef.Name]; ours {
				continue // checked above
			}
			r, err := c.Client.RbacV1().Roles(scope).Get(t.Context(), b.RoleRef.Name, metav1.GetOptions{})
			if err != nil {
				t.Errorf("%s: binding %s/%s: Role %s: %v", what, scope, b.Name, b.RoleRef.Name, err)
				continue
			}
			rules = r.Rules
		}
		for _, o := range overreach(rules, scope, owned) {
			t.Errorf("%s: binding %s to the built-in %s %s grants %s", what, b.Name, b.RoleRef.Kind, b.RoleRef.Name, o)
		}
	}
}

// everyFeature are the --set values turning every feature of the chart on, in mode.
func everyFeature(t *testing.T, mode string) []string {
	sets := []string{"mode=" + mode, "leaderElection.enabled=true", "replicas=2",
		"nodeAnnotator.enabled=true", "nodeAnnotator.learner.enabled=true", "agents.safe.settings.estimate=learned",
		"descheduler.enabled=true", "agents.telemetry.settings.deschedule=true",
		"alerts.enabled=true", "dashboard.enabled=true", "crds.podGroup=true", "crds.tasPolicy=true"}
	for _, a := range chartAgents(t) {
		sets = append(sets, "agents."+a+".enabled=true")
	}
	if mode == "plugin" {
		sets = append(sets, "plugin.quorumProfile=quorum-scheduler", "plugin.decisionsKept=100")
	} else {
		sets = append(sets, "agents.reward.settings.bind=true", "tls.enabled=true", "tls.serverSecret=ext-tls", "tls.clientSecret=client-tls")
	}
	return sets
}

// renderIn is helm template of the chart, release kss in namespace ns, with sets.
func renderIn(t *testing.T, ns string, sets ...string) ([]byte, error) {
	t.Helper()
	args := []string{"template", "kss", chartDir(t), "--namespace", ns, "--kube-version", "v1.37.1"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return runHelm(t, args...)
}

// TestLeastPrivilege: the chart with every feature on, in a namespace of its own and in
// kube-system, and every shipped yamlfile, grant nothing on ConfigMaps, Leases or Secrets
// beyond what they name (see the top of this file).
func TestLeastPrivilege(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t)
	renders := 0
	for _, mode := range []string{"extender", "plugin"} {
		for _, combined := range []bool{false, true} {
			sets := append(everyFeature(t, mode), fmt.Sprintf("combined.enabled=%t", combined))
			out, err := renderIn(t, "kube-safe-scheduler", sets...)
			if err != nil {
				t.Fatalf("%s mode, every feature: %v", mode, err)
			}
			what := fmt.Sprintf("chart, %s mode, combined %t, every feature, namespace kube-safe-scheduler", mode, combined)
			checkGrants(t, c, what, readGrants(t, what, out), "kube-safe-scheduler")
			renders++

			// In kube-system, every feature but safe's learned estimates, which the chart
			// refuses there (its follower lists the namespace's ConfigMaps).
			if _, err := renderIn(t, "kube-system", sets...); err == nil || !strings.Contains(err.Error(), "estimate learned") {
				t.Errorf("%s mode in kube-system with estimate learned: %v; want a refusal naming estimate learned", mode, err)
			}
			out, err = renderIn(t, "kube-system", append(sets, "agents.safe.settings.estimate=request")...)
			if err != nil {
				t.Fatalf("%s mode in kube-system: %v", mode, err)
			}
			what = fmt.Sprintf("chart, %s mode, combined %t, every feature, namespace kube-system", mode, combined)
			checkGrants(t, c, what, readGrants(t, what, out), "kube-system")
			renders++
		}
	}
	files, _ := filepath.Glob(filepath.Join(repoRoot(t), "yamlfiles", "*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		what := "yamlfiles/" + filepath.Base(f)
		// The shipped files are in kube-system: every Role there names its objects.
		checkGrants(t, c, what, readGrants(t, what, data), "kube-system")
	}
	t.Logf("%d renders and %d yamlfiles checked", renders, len(files))
}

// TestLeastPrivilegeSchedulerRole: the chart's scheduler ClusterRole grants everything the
// real API server's system:kube-scheduler grants, but leader election (leases and
// leasecandidates), which the chart grants on its own Lease by name: a newer Kubernetes whose
// scheduler needs more fails here rather than in a cluster.
func TestLeastPrivilegeSchedulerRole(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t)
	builtin, err := c.Client.RbacV1().ClusterRoles().Get(t.Context(), "system:kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := renderIn(t, "kube-safe-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	g := readGrants(t, "chart", out)
	ours, ok := g.clusterRoles["my-scheduler-scheduler"]
	if !ok {
		t.Fatal("the chart renders no ClusterRole my-scheduler-scheduler")
	}
	for _, b := range g.bindings {
		if b.RoleRef.Name == "system:kube-scheduler" {
			t.Errorf("the chart binds system:kube-scheduler (%s)", b.Name)
		}
	}
	covered := func(group, resource, verb string, names []string) bool {
		for _, r := range ours.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) &&
				(len(r.ResourceNames) == 0 || len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(r.ResourceNames, n) })) {
				return true
			}
		}
		return false
	}
	checked := 0
	for _, r := range builtin.Rules {
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				if group == "coordination.k8s.io" && (res == "leases" || res == "leasecandidates") {
					continue // leader election: the chart's own Lease, by name
				}
				for _, verb := range r.Verbs {
					checked++
					if !covered(group, res, verb, r.ResourceNames) {
						t.Errorf("system:kube-scheduler grants %s on %s %q (resourceNames %v); the chart's my-scheduler-scheduler does not",
							verb, res, group, r.ResourceNames)
					}
				}
			}
		}
	}
	t.Logf("%d grants of system:kube-scheduler covered", checked)
}

// TestLeastPrivilegeLearnerStore: the usage learner writes its store with what the chart grants
// (get and update by name on the ConfigMaps and the Lease the chart creates; no create): the
// chart rendered in its own namespace, applied for real, the annotator run as its service
// account with the render's environment. The writer takes the Lease and writes every shard.
func TestLeastPrivilegeLearnerStore(t *testing.T) {
	t.Parallel()
	sets := []string{"nodeAnnotator.learner.enabled=true", "nodeAnnotator.env.USAGE_STORE_SHARDS=3",
		"nodeAnnotator.env.USAGE_FLUSH_INTERVAL=1s", "nodeAnnotator.env.USAGE_LEASE_DURATION=3s", "agents.safe.settings.estimate=learned"}
	out, err := renderIn(t, chartNamespace, sets...)
	if err != nil {
		t.Fatal(err)
	}
	c := harness.StartCluster(t)
	c.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: "+chartNamespace+"}\n"), false)
	c.Apply(t, out, false)
	// The annotator's environment as rendered.
	objs, err := harness.ReadObjects(out)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != "node-annotator" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		vars, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
		for _, v := range vars {
			m := v.(map[string]any)
			env[m["name"].(string)] = fmt.Sprint(m["value"])
		}
	}
	if env["USAGE_LEARNER"] != "true" || env["USAGE_NAMESPACE"] != chartNamespace || env["STATS_SOURCE"] != "metrics-api" {
		t.Fatalf("the annotator's rendered environment %v", env)
	}
	bin := buildAnnotator(t)
	ns := chartNamespace
	kubeconfig := c.KubeconfigFor(t, "system:serviceaccount:"+ns+":node-annotator", "system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
	env["KUBECONFIG"] = kubeconfig
	env["HTTP_PORT"] = "127.0.0.1:" + strconv.Itoa(harness.MustFreePort(t))
	env["LOG_LEVEL"] = "DEBUG"
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	p := harness.StartProcess(t, "node-annotator", harness.LogDir(t), bin, list)
	deadline := time.Now().Add(time.Minute)
	for {
		written := 0
		for i := range 3 {
			cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), fmt.Sprintf("usage-learner-%d", i), metav1.GetOptions{})
			if err == nil && cm.Annotations["usage.kube-safe-scheduler.io/writer"] != "" {
				written++
			}
		}
		l, err := c.Client.CoordinationV1().Leases(ns).Get(t.Context(), "usage-learner", metav1.GetOptions{})
		if written == 3 && err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			t.Logf("the learner holds the Lease %s/usage-learner and wrote its 3 shards", ns)
			return
		}
		if p.Exited() || time.Now().After(deadline) {
			t.Fatalf("the learner did not take the Lease and write its shards (%d of 3 written):\n%s", written, p.Tail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
