package framework

import "context"

// Starter is an optional interface of an Agent with background work (a loop that writes what it
// learns, a leader election). The program calls Start once, after the cluster cache has started
// and before it serves; the work runs until ctx is done. An error stops the program.
type Starter interface {
	Start(ctx context.Context) error
}
