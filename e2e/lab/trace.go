package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// Trace fixtures (e2e/testdata/traces, derived by ./lab/tracegen; NOTICE there names the
// sources, their licences and the transformation).
const (
	googleFixture = "google2011-tasks.csv"
	// DefaultTraceDay is -trace-day's default: the PlanetLab day of every published table
	// before issue 52; planetlab-<day>.csv is its fixture.
	DefaultTraceDay = "20110303"
	// planetlabStep is the PlanetLab traces' sampling period.
	planetlabStep = 5 * time.Minute
)

// TraceTask is one task of the Google cluster trace 2011: its job and its mean usage over
// its measurement window divided by its request (cpu, memory).
type TraceTask struct {
	Job                string
	CPURatio, MemRatio float64
}

// Traces are the loaded fixtures: Google tasks (usage/request ratios grouped by job) and
// PlanetLab VMs' cpu utilization over a day (Day, as CloudSim names its folders: 20110303),
// each normalized to its day's mean.
type Traces struct {
	Tasks  []TraceTask
	Shapes []Shape
	Day    string
}

// TraceDays are the PlanetLab days with a fixture in dir (planetlab-<day>.csv).
func TraceDays(dir string) []string {
	matches, _ := filepath.Glob(filepath.Join(dir, "planetlab-*.csv"))
	var days []string
	for _, m := range matches {
		days = append(days, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "planetlab-"), ".csv"))
	}
	return days
}

// Shape is one PlanetLab VM's cpu utilization at 5-minute steps over a day divided by its
// mean over the day (so its mean is 1).
type Shape struct {
	Name   string
	Values []float64
}

// At is the shape's value at time t of its day (linear between samples, wrapping at the day).
func (s *Shape) At(t time.Duration) float64 {
	n := len(s.Values)
	x := math.Mod(float64(t)/float64(planetlabStep), float64(n))
	if x < 0 {
		x += float64(n)
	}
	i := int(x)
	f := x - float64(i)
	return s.Values[i]*(1-f) + s.Values[(i+1)%n]*f
}

// tracesDir is the fixtures' folder in the repository.
func tracesDir() (string, error) {
	root, err := harness.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "e2e", "testdata", "traces"), nil
}

// LoadTraces reads the fixtures in dir: the Google tasks and PlanetLab's day.
func LoadTraces(dir, day string) (*Traces, error) {
	tr := &Traces{Day: day}
	if _, err := os.Stat(filepath.Join(dir, "planetlab-"+day+".csv")); err != nil {
		return nil, fmt.Errorf("no PlanetLab fixture for day %q in %s (days there: %v)", day, dir, TraceDays(dir))
	}
	err := readCSV(filepath.Join(dir, googleFixture), true, func(rec []string) error {
		if len(rec) != 7 {
			return fmt.Errorf("%d fields, want 7 (job_id,task_index,cpu_request,memory_request,cpu_ratio,cpu_max_ratio,memory_ratio)", len(rec))
		}
		t := TraceTask{Job: rec[0]}
		var err error
		if t.CPURatio, err = strconv.ParseFloat(rec[4], 64); err != nil || !(t.CPURatio >= 0) || math.IsInf(t.CPURatio, 0) {
			return fmt.Errorf("cpu_ratio %q is not a non-negative number", rec[4])
		}
		if t.MemRatio, err = strconv.ParseFloat(rec[6], 64); err != nil || !(t.MemRatio >= 0) || math.IsInf(t.MemRatio, 0) {
			return fmt.Errorf("memory_ratio %q is not a non-negative number", rec[6])
		}
		tr.Tasks = append(tr.Tasks, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = readCSV(filepath.Join(dir, "planetlab-"+day+".csv"), false, func(rec []string) error {
		if len(rec) != 289 {
			return fmt.Errorf("%d fields, want a name and 288 five-minute values", len(rec))
		}
		s := Shape{Name: rec[0], Values: make([]float64, 288)}
		sum := 0.0
		for i, f := range rec[1:] {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || v < 0 || v > 100 {
				return fmt.Errorf("value %d %q is not a percentage", i+1, f)
			}
			s.Values[i] = v
			sum += v
		}
		if sum == 0 {
			return fmt.Errorf("VM %s is idle all day", s.Name)
		}
		for i := range s.Values {
			s.Values[i] /= sum / 288
		}
		tr.Shapes = append(tr.Shapes, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(tr.Tasks) == 0 || len(tr.Shapes) == 0 {
		return nil, fmt.Errorf("%s: no task or no VM in the fixtures", dir)
	}
	return tr, nil
}

func readCSV(path string, header bool, each func(rec []string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if header && line == 1 {
			continue
		}
		if err := each(rec); err != nil {
			return fmt.Errorf("%s line %d: %v", path, line, err)
		}
	}
}
