package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// Loading the pods straight into etcd. Through kube-apiserver each pod costs a create and a
// status update, about 4 ms of kube-apiserver CPU each: on a shared 2-core machine 50,000 pods
// took 25 minutes. kube-apiserver stores a pod as the object it created and updated (defaults,
// uid, managed fields added) in protobuf under /registry/pods/<namespace>/<name>, and its watch
// cache, which serves the extender's list and watch, takes every write to etcd under that
// prefix, whoever made it. So a few pods go through kube-apiserver first; what it added to each
// is taken as a strategic merge patch (per pod shape: with or without the sidecar) and applied
// to every other pod; the pods that went through kube-apiserver are checked equal to what the
// patch predicts for them (but for uid, timestamps and resourceVersion), so a field that
// kube-apiserver sets per pod stops the run instead of going missing; then the pods are written
// to etcd, encoded as kube-apiserver encodes them, and read back through kube-apiserver.

// throughAPI is the number of pods created through kube-apiserver before the others are loaded
// into etcd: the shapes' templates (pods 0 and 1) and pods to check the prediction on (both
// shapes).
const throughAPI = 6

// podLoader predicts, for each pod, the object kube-apiserver would store.
type podLoader struct {
	nodes int
	// patches are what kube-apiserver added to a pod, by shape (hasSidecar), and template the
	// pod it was taken from.
	patches  map[bool][]byte
	template map[bool]template
	encoder  runtime.Encoder
}

// template is what kube-apiserver added to a pod that depends on the pod: its managed fields,
// which name the owner's uid and the pod's IP (in JSON), and the node's topology labels
// (admission plugin PodTopologyLabels).
type template struct {
	managed      string
	uid, ip      string
	zone, region bool
}

// sent is pod j as the benchmark writes it: created bound to node, then given the status a
// kubelet writes at now.
func sent(j int, node string, now time.Time) *corev1.Pod {
	p := pod(j, node)
	p.Status = runningStatus(j, p, now)
	return p
}

// createThroughAPI creates pod j through kube-apiserver (the pod, then its status at now) and
// returns what it stored.
func createThroughAPI(ctx context.Context, client kubernetes.Interface, j int, node string, now time.Time) (*corev1.Pod, error) {
	p := pod(j, node)
	created, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	created.Status = runningStatus(j, created, now)
	return client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
}

// newPodLoader takes what kube-apiserver added to the stored pods (stored[j] is pod j, sent on
// nodeOf(j) with its status at times[j]) per shape from the first pod of each shape, and checks
// the prediction on the others.
func newPodLoader(stored []*corev1.Pod, nodes int, times []time.Time) (*podLoader, error) {
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		return nil, fmt.Errorf("no protobuf serializer")
	}
	l := &podLoader{nodes: nodes, patches: map[bool][]byte{}, template: map[bool]template{},
		encoder: codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)}
	for j, s := range stored {
		if _, ok := l.patches[hasSidecar(j)]; ok {
			continue
		}
		p := sent(j, nodeName(nodeOf(j, nodes)), times[j])
		patch, err := diff(p, s)
		if err != nil {
			return nil, err
		}
		managed, err := json.Marshal(s.ManagedFields)
		if err != nil {
			return nil, err
		}
		_, zone := s.Labels[zoneLabel]
		_, region := s.Labels[regionLabel]
		l.patches[hasSidecar(j)] = patch
		l.template[hasSidecar(j)] = template{managed: string(managed), uid: string(p.OwnerReferences[0].UID), ip: p.Status.PodIP, zone: zone, region: region}
	}
	if len(l.patches) != 2 {
		return nil, fmt.Errorf("%d pods through kube-apiserver: both shapes (with and without the sidecar) are needed", len(stored))
	}
	for j, s := range stored {
		p, err := l.predict(j, times[j])
		if err != nil {
			return nil, err
		}
		if d, err := diff(normalized(p), normalized(s)); err != nil || string(d) != "{}" {
			return nil, fmt.Errorf("pod %d as kube-apiserver stored it differs from its prediction by %s (%v): a field it sets per pod?", j, d, err)
		}
	}
	return l, nil
}

const (
	zoneLabel   = "topology.kubernetes.io/zone"
	regionLabel = "topology.kubernetes.io/region"
)

// predict returns the object kube-apiserver would store for pod j with its status at now (a new
// uid, created at now).
func (l *podLoader) predict(j int, now time.Time) (*corev1.Pod, error) {
	node := nodeOf(j, l.nodes)
	s := sent(j, nodeName(node), now)
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	b, err = strategicpatch.StrategicMergePatch(b, l.patches[hasSidecar(j)], corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("pod %d: %w", j, err)
	}
	var p corev1.Pod
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("pod %d: %w", j, err)
	}
	p.UID = uuid.NewUUID()
	p.CreationTimestamp = metav1.NewTime(now)
	p.ResourceVersion = ""
	t := l.template[hasSidecar(j)]
	managed := strings.ReplaceAll(t.managed, `\"uid\":\"`+t.uid+`\"`, `\"uid\":\"`+string(s.OwnerReferences[0].UID)+`\"`)
	managed = strings.ReplaceAll(managed, `\"ip\":\"`+t.ip+`\"`, `\"ip\":\"`+s.Status.PodIP+`\"`)
	p.ManagedFields = nil
	if err := json.Unmarshal([]byte(managed), &p.ManagedFields); err != nil {
		return nil, fmt.Errorf("pod %d: managed fields: %w", j, err)
	}
	if t.zone {
		p.Labels[zoneLabel] = zoneOf(node)
	}
	if t.region {
		p.Labels[regionLabel] = "eu-west-1"
	}
	return &p, nil
}

// diff returns the strategic merge patch from a to b ("{}" when equal).
func diff(a, b *corev1.Pod) ([]byte, error) {
	ab, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	bb, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateTwoWayMergePatch(ab, bb, corev1.Pod{})
}

// normalized is p without what differs between any two pods created alike: uid, resourceVersion,
// the times of its creation and of its managed fields.
func normalized(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.UID, p.ResourceVersion, p.CreationTimestamp = "", "", metav1.Time{}
	for i := range p.ManagedFields {
		p.ManagedFields[i].Time = nil
	}
	return p
}

// key is where kube-apiserver keeps pod p in etcd (its default --etcd-prefix, /registry).
func key(p *corev1.Pod) string { return "/registry/pods/" + p.Namespace + "/" + p.Name }

// encode is p as kube-apiserver stores it: protobuf, in the envelope that names its kind.
func (l *podLoader) encode(p *corev1.Pod) ([]byte, error) {
	var buf bytes.Buffer
	if err := l.encoder.Encode(p, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// put writes pods to etcd in one transaction that fails if any of them exists.
func put(ctx context.Context, etcd *clientv3.Client, l *podLoader, pods []*corev1.Pod) error {
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	for _, p := range pods {
		b, err := l.encode(p)
		if err != nil {
			return err
		}
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key(p)), "=", 0))
		ops = append(ops, clientv3.OpPut(key(p), string(b)))
	}
	r, err := etcd.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return err
	}
	if !r.Succeeded {
		return fmt.Errorf("one of %s..%s is in etcd already", key(pods[0]), key(pods[len(pods)-1]))
	}
	return nil
}

// etcdClient connects to the cluster's etcd, whose address is on its command line
// (--listen-client-urls).
func etcdClient(pid int) (*clientv3.Client, error) {
	if pid == 0 {
		return nil, fmt.Errorf("the cluster's etcd process was not found")
	}
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, fmt.Errorf("etcd's command line: %w", err)
	}
	for _, arg := range strings.Split(string(cmd), "\x00") {
		if url, ok := strings.CutPrefix(arg, "--listen-client-urls="); ok {
			return clientv3.New(clientv3.Config{Endpoints: strings.Split(url, ","), DialTimeout: 10 * time.Second,
				MaxCallSendMsgSize: 16 << 20})
		}
	}
	return nil, fmt.Errorf("etcd (pid %d) has no --listen-client-urls", pid)
}

// checkThroughAPI reads pod p back through kube-apiserver's watch cache (resourceVersion 0),
// waiting for the cache to have it, and checks it is the object written.
func checkThroughAPI(ctx context.Context, client kubernetes.Interface, p *corev1.Pod) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{ResourceVersion: "0"})
		if err == nil {
			if got.UID != p.UID {
				return fmt.Errorf("pod %s/%s read through kube-apiserver has uid %s, written %s", p.Namespace, p.Name, got.UID, p.UID)
			}
			if d, err := diff(normalized(p), normalized(got)); err != nil || string(d) != "{}" {
				return fmt.Errorf("pod %s/%s read through kube-apiserver differs from what was written by %s (%v)", p.Namespace, p.Name, d, err)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pod %s/%s written to etcd, not served by kube-apiserver after 2 minutes: %w", p.Namespace, p.Name, err)
		}
		time.Sleep(time.Second)
	}
}
