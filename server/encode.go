package server

// Answers written without reflection: what encoding/json would write, byte for byte (see
// names.go for why), and for a full-node filter the scheduler's own node bytes echoed.

import (
	"bytes"
	"encoding/json"
	"strconv"

	jsoniter "github.com/json-iterator/go"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// appendFilterResult appends res as an encoding/json Encoder writes it, except that for a
// full-node answer (kept not nil) Nodes is made of the raw items kept: the scheduler's own bytes
// of the passing nodes, unchanged.
func appendFilterResult(buf *bytes.Buffer, kept []jsoniter.RawMessage, res *extenderv1.ExtenderFilterResult) error {
	var tail bytes.Buffer
	enc := json.NewEncoder(&tail)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		FailedNodes, FailedAndUnresolvableNodes extenderv1.FailedNodesMap
		Error                                   string
	}{res.FailedNodes, res.FailedAndUnresolvableNodes, res.Error}); err != nil {
		return err
	}
	rest := tail.Bytes() // {"FailedNodes":...}\n
	if kept != nil {
		buf.WriteString(`{"Nodes":{"metadata":{},"items":[`)
		for i, raw := range kept {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(raw)
		}
		buf.WriteString(`]},"NodeNames":null,`)
	} else {
		buf.WriteString(`{"Nodes":null,"NodeNames":`)
		appendNames(buf, res.NodeNames)
		buf.WriteByte(',')
	}
	buf.Write(rest[1:]) // rest without its opening brace
	return nil
}

// appendString appends s as a JSON string, as an encoder without HTML escaping writes it.
func appendString(buf *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		if !plain(s[i]) {
			var q bytes.Buffer
			enc := json.NewEncoder(&q)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			buf.Write(bytes.TrimSuffix(q.Bytes(), []byte{'\n'}))
			return
		}
	}
	buf.WriteByte('"')
	buf.WriteString(s)
	buf.WriteByte('"')
}

// appendNames appends names as a JSON array of strings, or null for a nil pointer.
func appendNames(buf *bytes.Buffer, names *[]string) {
	if names == nil {
		buf.WriteString("null")
		return
	}
	buf.WriteByte('[')
	for i, n := range *names {
		if i > 0 {
			buf.WriteByte(',')
		}
		appendString(buf, n)
	}
	buf.WriteByte(']')
}

// appendPriorities appends list as encoding/json writes a HostPriorityList, with the newline an
// Encoder ends it with.
func appendPriorities(buf *bytes.Buffer, list extenderv1.HostPriorityList) {
	if list == nil {
		buf.WriteString("null\n")
		return
	}
	var num [20]byte
	buf.WriteByte('[')
	for i := range list {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"Host":`)
		appendString(buf, list[i].Host)
		buf.WriteString(`,"Score":`)
		buf.Write(strconv.AppendInt(num[:0], list[i].Score, 10))
		buf.WriteByte('}')
	}
	buf.WriteString("]\n")
}
