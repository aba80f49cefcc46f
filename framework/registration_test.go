package framework_test

import (
	"strings"
	"testing"

	"github.com/kube-safe-scheduler/extender/framework"
)

type offerConfig struct{}

func (offerConfig) Validate() error { return nil }

type offerAgent struct{ filters []framework.Filter }

func (offerAgent) Name() string                          { return "offer" }
func (a offerAgent) Filters() []framework.Filter         { return a.filters }
func (offerAgent) Prioritizers() []framework.Prioritizer { return nil }

// Registration.New refuses an agent whose functions are not the ones its Offer names: the
// programs read the names from the Offer without building the agent.
func TestRegistrationChecksTheOffer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		offered []string
		built   []framework.Filter
		wantErr string
	}{
		{name: "as offered", offered: []string{"a"}, built: []framework.Filter{{Name: "a"}}},
		{name: "one more", offered: []string{"a"}, built: []framework.Filter{{Name: "a"}, {Name: "b"}},
			wantErr: `agent offer: offers filters ["a" "b"] and prioritizers [], its Registration names filters ["a"] and prioritizers []`},
		{name: "renamed", offered: []string{"a"}, built: []framework.Filter{{Name: "x"}}, wantErr: `offers filters ["x"]`},
		{name: "none built", offered: []string{"a"}, wantErr: `offers filters []`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := framework.Register("offer", func() offerConfig { return offerConfig{} },
				func(offerConfig, framework.Handle) (offerAgent, error) { return offerAgent{tc.built}, nil },
				framework.Offer{Filters: tc.offered})
			_, err := r.New(r.NewConfig(), framework.NewHandle(nil))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
