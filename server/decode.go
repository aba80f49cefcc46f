package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"

	jsoniter "github.com/json-iterator/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The scheduler marshals ExtenderArgs with encoding/json; most of a Node's bytes (images,
// conditions, node info, managed fields) are of no use to an agent. Full-node requests are
// therefore decoded in one pass with jsoniter, several times faster than encoding/json here,
// into lean nodes that keep only what agents read (framework.NodeView). For a filter, a
// structural scan (scan.go) then finds each node's bytes in the body, so that the answer echoes
// the scheduler's own bytes for the passing nodes instead of re-encoding them.
var fastJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// rawItems is the node list of an ExtenderArgs left raw (a filter echoes passing nodes). It is
// decoded only from a body leanArgs has decoded already, so it skips what leanArgs has read.
type rawItems struct {
	Nodes *struct {
		Items []jsoniter.RawMessage `json:"items"`
	}
}

// leanArgs is ExtenderArgs with lean nodes, decoded in one pass (a prioritizer echoes nothing).
type leanArgs struct {
	Pod   *corev1.Pod
	Nodes *struct {
		Items []leanNode `json:"items"`
	}
	NodeNames *nameList
}

// leanNode is the part of a Node that agents may read in a full-node request.
type leanNode struct {
	Metadata struct {
		Name            string            `json:"name"`
		UID             types.UID         `json:"uid"`
		ResourceVersion string            `json:"resourceVersion"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec   corev1.NodeSpec `json:"spec"`
	Status struct {
		Capacity    corev1.ResourceList  `json:"capacity"`
		Allocatable corev1.ResourceList  `json:"allocatable"`
		Addresses   []corev1.NodeAddress `json:"addresses"`
	} `json:"status"`
}

// node returns the decoded node: exactly framework.NodeView of the node the request carried
// (TestNodeViewSameInBothForms holds the two equal).
func (l *leanNode) node() corev1.Node {
	m := &l.Metadata
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
			Labels: m.Labels, Annotations: m.Annotations},
		Spec: l.Spec,
		Status: corev1.NodeStatus{Capacity: l.Status.Capacity, Allocatable: l.Status.Allocatable,
			Addresses: l.Status.Addresses},
	}
}

// decodedArgs is a decoded ExtenderArgs.
type decodedArgs struct {
	pod *corev1.Pod
	// nodes, for a full-node request: the lean nodes, and raw[i] the bytes node i came in.
	nodes []corev1.Node
	raw   []jsoniter.RawMessage
	full  bool
	// names, for a names request.
	names []string
}

var errNoPod = errors.New("the request has no Pod")
var errNoNodes = errors.New("the request has neither Nodes nor NodeNames")

// decodeArgs decodes an ExtenderArgs body in one pass into lean nodes. keepRaw also finds, for a
// full-node request, the bytes of each node in body (raw aliases body).
func decodeArgs(body []byte, keepRaw bool) (*decodedArgs, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("empty body")
	}
	var w leanArgs
	if err := fastJSON.Unmarshal(body, &w); err != nil {
		return nil, errors.New(jsonProblem(body, &w, err))
	}
	if err := checkControlBytes(body); err != nil {
		return nil, errors.New(jsonProblem(body, &w, err))
	}
	d, err := newDecodedArgs(w.Pod, w.Nodes != nil, w.NodeNames)
	if err != nil || !d.full {
		return d, err
	}
	d.nodes = make([]corev1.Node, len(w.Nodes.Items))
	for i := range w.Nodes.Items {
		d.nodes[i] = w.Nodes.Items[i].node()
	}
	if !keepRaw {
		return d, nil
	}
	if spans, err := nodeItemSpans(body); err == nil && len(spans) == len(d.nodes) {
		d.raw = make([]jsoniter.RawMessage, len(spans))
		for i, sp := range spans {
			d.raw[i] = body[sp[0]:sp[1]:sp[1]]
		}
		return d, nil
	}
	// A shape the scan does not follow (it is valid JSON, or decoding would have failed):
	// capture the items while decoding again, slower but exact.
	var wr rawItems
	if err := fastJSON.Unmarshal(body, &wr); err != nil {
		return nil, err
	}
	if wr.Nodes == nil || len(wr.Nodes.Items) != len(d.nodes) {
		return nil, errors.New("inconsistent Nodes.items")
	}
	d.raw = wr.Nodes.Items
	return d, nil
}

// checkControlBytes closes the one gap found between jsoniter and encoding/json: in structs of
// up to ten fields, jsoniter matches keys by hash and lets raw control characters in a key pass.
// Valid JSON holds bytes below 0x20 only as whitespace between tokens, and the scheduler's
// encoding/json writes none, so a body without them needs no second look (a word-at-a-time
// test); one with them is checked by encoding/json, whose error names the offending byte.
func checkControlBytes(body []byte) error {
	if !hasControlByte(body) {
		return nil
	}
	var v json.RawMessage
	return json.Unmarshal(body, &v)
}

// hasControlByte reports whether b holds a byte below 0x20, eight bytes at a time: for a word
// x, (x - 0x20 in every byte) & ^x & 0x80 in every byte is non-zero exactly when some byte of
// x is below 0x20 (the borrow that can set a higher byte's bit only follows a byte that is).
func hasControlByte(b []byte) bool {
	const low, high = 0x2020202020202020, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		if (x-low)&^x&high != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

func newDecodedArgs(pod *corev1.Pod, full bool, names *nameList) (*decodedArgs, error) {
	switch {
	case pod == nil:
		return nil, errNoPod
	case full:
		return &decodedArgs{pod: pod, full: true}, nil
	case names != nil:
		return &decodedArgs{pod: pod, names: *names}, nil
	}
	return nil, errNoNodes
}
