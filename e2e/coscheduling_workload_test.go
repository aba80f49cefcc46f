package e2e

import (
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// TestCoschedulingBesideWorkloadAPI: with Kubernetes' own gang scheduling on (GenericWorkload
// gate, scheduling.k8s.io/v1beta1 served), a native PodGroup and one of ours, both named
// "shared", side by side. The native members (spec.schedulingGroup) are the in-tree
// GangScheduling plugin's: ours pass them and never look "shared" up among our PodGroups; a
// native member that also carries our label gets a Warning event saying the native group governs
// it and is not counted in ours. Both groups complete.
func TestCoschedulingBesideWorkloadAPI(t *testing.T) {
	t.Parallel()
	for _, m := range gangModes {
		t.Run(m.name, func(t *testing.T) {
			c := harness.StartClusterWith(t, harness.ClusterOptions{APIServerArgs: []string{
				"--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true"}})
			c.ApplyFile(t, filepath.Join(repoRoot(t), "yamlfiles", pluginsFile), false)
			sa := c.KubeconfigFor(t, pluginServiceAccount, serviceAccountGroups...)
			c.ApplyCRDFile(t, filepath.Join(repoRoot(t), "yamlfiles", "podgroup-crd.yaml"))
			c.CreateNode(t, harness.NodeSpec{Name: "n1", CPU: "8"})
			c.RunDeployment(t, m.deployment(t), harness.RunOptions{Kubeconfig: sa, SchedulerArgs: []string{"--feature-gates=GenericWorkload=true"}})
			c.Apply(t, []byte(`{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
				"metadata": {"name": "shared", "namespace": "default"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}`), false)
			podGroup(t, c, "shared", `"minMember": 2`)

			native := func(name string, ourLabel bool) {
				spec := harness.PodSpec{Name: name, SchedulerName: m.scheduler, CPU: "1"}
				if ourLabel {
					spec.Labels = map[string]string{"scheduling.x-k8s.io/pod-group": "shared"}
				}
				pod, err := spec.Pod()
				if err != nil {
					t.Fatal(err)
				}
				group := "shared"
				pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group}
				if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			native("native-0", false)
			c.CreatePod(t, member(m, "ours-0", "shared", "1"))
			time.Sleep(2 * time.Second)
			for _, p := range []string{"native-0", "ours-0"} {
				if n := c.PodNode(t, "default", p); n != "" {
					t.Fatalf("%s bound to %s while its group has 1 of 2", p, n)
				}
			}
			// The second native member carries our label too: the native group completes, ours
			// does not count it.
			native("native-1", true)
			c.WaitForEvent(t, "default", "native-1", "PodGroupOverruled", "the native group governs it")
			c.WaitForBinding(t, "default", "native-0")
			c.WaitForBinding(t, "default", "native-1")
			if n := c.PodNode(t, "default", "ours-0"); n != "" {
				t.Fatalf("ours-0 bound to %s: the native member was counted in our group", n)
			}
			c.CreatePod(t, member(m, "ours-1", "shared", "1"))
			c.WaitForBinding(t, "default", "ours-0")
			c.WaitForBinding(t, "default", "ours-1")
		})
	}
}
