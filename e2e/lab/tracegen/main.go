// Command tracegen derives the quality lab's trace fixtures (e2e/testdata/traces) from raw
// public trace files, which are not committed (e2e/testdata/traces/NOTICE says where they are
// and what is done to them):
//
//	go run ./lab/tracegen -google-usage task_usage.csv -google-events task_events-00000.csv.gz \
//	    -planetlab planetlab/20110303 -out testdata/traces
//	go run ./lab/tracegen -planetlab planetlab/20110322 -out testdata/traces   # another day only
//
// It writes google2011-tasks.csv (one row per task of the Google cluster trace 2011 that has a
// usage record and a cpu and memory request: its job, its requests and its usage/request ratios)
// and planetlab-<day>.csv, named after the day's folder (one row per PlanetLab VM of that day
// whose mean cpu utilization is at least -planetlab-min-mean percent: its 288 five-minute
// utilizations).
package main

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func main() {
	usage := flag.String("google-usage", "", "Google 2011 task_usage CSV (with or without a header; .gz read as gzip)")
	events := flag.String("google-events", "", "Google 2011 task_events CSV of the same shard (.gz read as gzip)")
	planet := flag.String("planetlab", "", "folder of one day of PlanetLab cpu traces (one file per VM, 288 lines of percent)")
	minMean := flag.Float64("planetlab-min-mean", 10, "keep PlanetLab VMs whose mean cpu utilization is at least this percent")
	out := flag.String("out", "", "folder to write the fixtures into")
	flag.Parse()
	if (*usage == "") != (*events == "") || *planet == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "tracegen: need -planetlab and -out, and -google-usage with -google-events (or neither: the PlanetLab day only)")
		os.Exit(2)
	}
	if *usage != "" {
		if err := google(*usage, *events, filepath.Join(*out, "google2011-tasks.csv")); err != nil {
			fmt.Fprintf(os.Stderr, "tracegen: %v\n", err)
			os.Exit(1)
		}
	}
	if err := planetlab(*planet, *minMean, filepath.Join(*out, planetlabFile(*planet))); err != nil {
		fmt.Fprintf(os.Stderr, "tracegen: %v\n", err)
		os.Exit(1)
	}
}

// rows reads every record of a CSV file (gzip if its name ends in .gz), skipping a header
// whose first field is not a number.
func rows(path string, each func(rec []string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = bufio.NewReader(f)
	if strings.HasSuffix(path, ".gz") {
		if r, err = gzip.NewReader(r); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if _, err := strconv.ParseFloat(rec[0], 64); err != nil && line == 1 {
			continue
		}
		if err := each(rec); err != nil {
			return fmt.Errorf("%s line %d: %v", path, line, err)
		}
	}
}

type taskKey struct{ job, task string }

// google joins task_usage (mean cpu rate, max cpu rate, canonical memory per measurement
// window, averaged over the task's windows in the file) with the last cpu and memory request
// task_events gives each task, and writes one row per task that has both.
func google(usagePath, eventsPath, out string) error {
	type use struct{ cpu, cpuMax, mem, n float64 }
	uses := map[taskKey]*use{}
	var order []taskKey
	err := rows(usagePath, func(rec []string) error {
		if len(rec) < 14 {
			return fmt.Errorf("task_usage has %d fields, want at least 14", len(rec))
		}
		k := taskKey{rec[2], rec[3]}
		var v [3]float64
		for i, col := range []int{5, 13, 6} { // cpu_rate, max_cpu_rate, canonical_memory
			x, err := strconv.ParseFloat(rec[col], 64)
			if err != nil {
				return fmt.Errorf("field %d: %v", col+1, err)
			}
			v[i] = x
		}
		u := uses[k]
		if u == nil {
			u = &use{}
			uses[k] = u
			order = append(order, k)
		}
		u.cpu, u.cpuMax, u.mem, u.n = u.cpu+v[0], u.cpuMax+v[1], u.mem+v[2], u.n+1
		return nil
	})
	if err != nil {
		return err
	}
	reqs := map[taskKey][2]float64{}
	err = rows(eventsPath, func(rec []string) error {
		if len(rec) < 11 {
			return fmt.Errorf("task_events has %d fields, want at least 11", len(rec))
		}
		k := taskKey{rec[2], rec[3]}
		if uses[k] == nil || rec[9] == "" || rec[10] == "" {
			return nil
		}
		cpu, err1 := strconv.ParseFloat(rec[9], 64)
		mem, err2 := strconv.ParseFloat(rec[10], 64)
		if err1 != nil || err2 != nil || cpu <= 0 || mem <= 0 {
			return nil
		}
		reqs[k] = [2]float64{cpu, mem}
		return nil
	})
	if err != nil {
		return err
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, _ := strconv.ParseInt(order[i].job, 10, 64)
		b, _ := strconv.ParseInt(order[j].job, 10, 64)
		if a != b {
			return a < b
		}
		x, _ := strconv.Atoi(order[i].task)
		y, _ := strconv.Atoi(order[j].task)
		return x < y
	})
	var b strings.Builder
	b.WriteString("job_id,task_index,cpu_request,memory_request,cpu_ratio,cpu_max_ratio,memory_ratio\n")
	n := 0
	for _, k := range order {
		r, ok := reqs[k]
		if !ok {
			continue
		}
		u := uses[k]
		fmt.Fprintf(&b, "%s,%s,%g,%g,%.4g,%.4g,%.4g\n", k.job, k.task, r[0], r[1],
			u.cpu/u.n/r[0], u.cpuMax/u.n/r[0], u.mem/u.n/r[1])
		n++
	}
	if n == 0 {
		return fmt.Errorf("no task of %s has a request in %s", usagePath, eventsPath)
	}
	fmt.Fprintf(os.Stderr, "tracegen: %s: %d tasks (of %d with usage)\n", out, n, len(order))
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

// planetlabFile is the fixture's name for the day folder dir (CloudSim names them by date):
// planetlab-20110303.csv for planetlab/20110303.
func planetlabFile(dir string) string {
	return "planetlab-" + filepath.Base(filepath.Clean(dir)) + ".csv"
}

// planetlab writes the VMs of dir whose mean utilization is at least minMean, one row each:
// the file's name, then its 288 values.
func planetlab(dir string, minMean float64, out string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	kept := 0
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		fields := strings.Fields(string(data))
		if len(fields) != 288 {
			return fmt.Errorf("%s: %d values, want 288 (a day of 5-minute samples)", e.Name(), len(fields))
		}
		sum := 0.0
		for _, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || v < 0 || v > 100 {
				return fmt.Errorf("%s: %q is not a percentage", e.Name(), f)
			}
			sum += v
		}
		if sum/288 < minMean {
			continue
		}
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(e.Name(), ",", "_"), " ", "_"))
		b.WriteString("," + strings.Join(fields, ",") + "\n")
		kept++
	}
	if kept == 0 {
		return fmt.Errorf("%s: no VM with a mean utilization of %g %% or more", dir, minMean)
	}
	fmt.Fprintf(os.Stderr, "tracegen: %s: %d VMs of %d\n", out, kept, len(entries))
	return os.WriteFile(out, []byte(b.String()), 0o644)
}
