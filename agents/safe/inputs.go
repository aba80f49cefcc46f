package safe

// resourceInputs are what the agent reads of a node for one resource: the blended free amount,
// its standard deviation and the allocatable amount, before any pod's demand is added.
type resourceInputs struct {
	measured            bool // the mean annotation is present and readable
	free, std, capacity float64
	forecast            bool
}

// nodeInputs are a node's inputs for both resources, memoized per node version
// (framework.NodeMemo): reading them costs about half of a filter call (six annotation
// lookups, up to four float parses, a quantity conversion).
type nodeInputs struct {
	cpu, memory resourceInputs
}
