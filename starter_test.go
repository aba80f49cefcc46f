package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kube-safe-scheduler/extender/framework"
)

// starterConfig is the configuration of the test agent "starter": Fail makes its Start fail.
type starterConfig struct {
	Fail bool `json:"fail" env:"STARTER_FAIL" flag:"starter-fail" help:"Start fails"`
}

func (starterConfig) Validate() error { return nil }

type starterAgent struct {
	cfg     starterConfig
	started chan context.Context
}

func (*starterAgent) Name() string                          { return "starter" }
func (*starterAgent) Filters() []framework.Filter           { return nil }
func (*starterAgent) Prioritizers() []framework.Prioritizer { return nil }
func (a *starterAgent) Start(ctx context.Context) error {
	if a.cfg.Fail {
		return errors.New("no table")
	}
	a.started <- ctx
	return nil
}

// An agent implementing framework.Starter is started once with the program's context, which ends
// when the program stops; a Start error stops the program, naming the agent.
func TestRunStartsStarters(t *testing.T) {
	started := make(chan context.Context, 1)
	saved := compiled
	t.Cleanup(func() { compiled = saved })
	compiled = append(append([]framework.Registration(nil), saved...), framework.Register("starter",
		func() starterConfig { return starterConfig{} },
		func(cfg starterConfig, _ framework.Handle) (*starterAgent, error) {
			return &starterAgent{cfg: cfg, started: started}, nil
		}, framework.Offer{}))

	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0"}, env("AGENTS", "starter", "CLUSTER_ACCESS", "none"), &out)
	}()
	var agentCtx context.Context
	select {
	case agentCtx = <-started:
	case code := <-done:
		t.Fatalf("exited with %d before starting the agent; log %s", code, out.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("the agent was not started; log %s", out.String())
	}
	if agentCtx.Err() != nil {
		t.Fatal("started with an ended context")
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit code %d; log %s", code, out.String())
	}
	<-agentCtx.Done() // the agent's work stops with the program

	var failOut syncBuffer
	code := run(context.Background(), []string{"--listen", "127.0.0.1:0"}, env("AGENTS", "starter", "CLUSTER_ACCESS", "none", "STARTER_FAIL", "true"), &failOut)
	if code != 1 || !strings.Contains(failOut.String(), "agent starter: cannot start: no table") {
		t.Errorf("exit code %d, log %s", code, failOut.String())
	}
}
