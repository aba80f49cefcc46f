package workload

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
)

// Listers is the Owners of a process that watches ReplicaSets and Jobs: exact where the names
// are only a convention. Either lister may be nil (that kind is then read from names).
type Listers struct {
	ReplicaSets appslisters.ReplicaSetLister
	Jobs        batchlisters.JobLister
}

var _ Owners = Listers{}

// Controller implements Owners.
func (l Listers) Controller(kind, namespace, name string) (*metav1.OwnerReference, bool) {
	switch {
	case kind == "ReplicaSet" && l.ReplicaSets != nil:
		rs, err := l.ReplicaSets.ReplicaSets(namespace).Get(name)
		if err != nil {
			return nil, false
		}
		return metav1.GetControllerOf(rs), true
	case kind == "Job" && l.Jobs != nil:
		j, err := l.Jobs.Jobs(namespace).Get(name)
		if err != nil {
			return nil, false
		}
		return metav1.GetControllerOf(j), true
	}
	return nil, false
}
