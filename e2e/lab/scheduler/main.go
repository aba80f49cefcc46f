// Command lab-scheduler is kube-scheduler v1.37 with the quality lab's restatement of
// scheduler-plugins' Trimaran Score plugins, TargetLoadPacking and LoadVariationRiskBalancing
// (package e2e/lab/trimaran), registered under their scheduler-plugins names, and with the lab's
// two reference Score plugins, LabOracle and LabWorkloadLevel (package e2e/lab/reference). It
// exists for the lab only (make eval), which builds it with harness.BuildLabScheduler and gives
// it the statistics' settings through TRIMARAN_* variables (trimaran.SettingsFromEnv) and the
// run's plan through LAB_PLAN. Every flag is kube-scheduler's.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/kube-safe-scheduler/extender/e2e/lab/reference"
	"github.com/kube-safe-scheduler/extender/e2e/lab/trimaran"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand(
		app.WithPlugin(trimaran.TargetLoadPackingName, trimaran.NewTargetLoadPacking),
		app.WithPlugin(trimaran.LoadVariationRiskBalancingName, trimaran.NewLoadVariationRiskBalancing),
		app.WithPlugin(reference.OracleName, reference.NewOracle),
		app.WithPlugin(reference.WorkloadLevelName, reference.NewWorkloadLevel),
	)))
}
