package main

import (
	"fmt"
	"strings"
)

// Annotations and labels the workload puts on its pods for kwok's Stages and for the lab.
const (
	// runAnnotation is how long (a Go duration, real time) a pod runs before kwok completes it.
	runAnnotation = "lab.kss.dev/run"
	// typeLabel is the pod type (the reward agent reads the label podtype).
	typeLabel = "podtype"
	// failAnnotation marks a pod that kwok fails instead of running, on the nodes listed in
	// failingNodes (the reward workload).
	failAnnotation = "lab.kss.dev/fails-on-bad-nodes"
)

// stages returns kwok's Stages. A node stage must exist for kwok to manage nodes (and so their
// pods): lab-node-ready makes a node that is not Ready ready (the harness creates them Ready).
// The pod stages: a bound pod starts at once (Running, Ready); a running pod
// succeeds after its runAnnotation; a pod marked failAnnotation bound to one of badNodes fails
// at start instead of running. The stages' selectors are disjoint, so each pod takes one path.
func stages(badNodes []string) string {
	bad := "['-']" // NotIn and In need a value; no node is named "-"
	if len(badNodes) > 0 {
		bad = "['" + strings.Join(badNodes, "', '") + "']"
	}
	notBad := fmt.Sprintf(`    - key: '.spec.nodeName'
      operator: 'NotIn'
      values: %s
`, bad)
	return `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: lab-node-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values: ['True']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
        reason: KubeletReady
        status: "True"
        type: Ready
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: lab-pod-start
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.podIP'
      operator: 'DoesNotExist'
    - key: '.metadata.annotations["` + failAnnotation + `"]'
      operator: 'DoesNotExist'
  next:
    statusTemplate: ` + runningTemplate + `
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: lab-pod-start-fragile
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.podIP'
      operator: 'DoesNotExist'
    - key: '.metadata.annotations["` + failAnnotation + `"]'
      operator: 'Exists'
` + notBad + `  next:
    statusTemplate: ` + runningTemplate + `
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: lab-pod-fail
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.podIP'
      operator: 'DoesNotExist'
    - key: '.metadata.annotations["` + failAnnotation + `"]'
      operator: 'Exists'
    - key: '.spec.nodeName'
      operator: 'In'
      values: ` + bad + `
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: Ready
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        state:
          terminated:
            exitCode: 1
            reason: Error
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      startTime: {{ $now | Quote }}
      phase: Failed
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: lab-pod-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
  delay:
    durationMilliseconds: 60000
    durationFrom:
      expressionFrom: '.metadata.annotations["` + runAnnotation + `"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: Ready
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            reason: Completed
            finishedAt: {{ $now | Quote }}
      {{ end }}
      phase: Succeeded
`
}

// runningTemplate is the status of a pod that started: Running, Ready, with addresses.
const runningTemplate = `|
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      startTime: {{ $now | Quote }}
      phase: Running`
