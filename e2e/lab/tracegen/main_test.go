package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoogle: usage averaged over a task's windows, divided by the request in force (the last
// event carrying one); a task without a request is left out.
func TestGoogle(t *testing.T) {
	dir := t.TempDir()
	usage := "start_time,end_time,job_id,task_index,machine_id,cpu_rate,canonical_memory,a,b,c,d,e,f,max_cpu_rate\n" +
		"600,900,7,0,1,0.1,0.2,0,0,0,0,0,0,0.4\n" +
		"900,1200,7,0,1,0.3,0.2,0,0,0,0,0,0,0.8\n" +
		"600,900,7,1,1,0.05,0.1,0,0,0,0,0,0,0.1\n" +
		"600,900,8,0,1,0.05,0.1,0,0,0,0,0,0,0.1\n"
	events := "0,,7,0,1,0,u,3,9,0.5,0.4,0,0\n" +
		"0,,7,0,1,1,u,3,9,0.4,0.4,0,0\n" + // in force for 7/0
		"0,2,7,1,1,0,u,3,9,,,,\n" +
		"0,,7,1,1,1,u,3,9,0.1,0.2,0,0\n" +
		"0,2,8,0,1,0,u,3,9,,,,\n" // no request: left out
	up, ep := filepath.Join(dir, "u.csv"), filepath.Join(dir, "e.csv")
	os.WriteFile(up, []byte(usage), 0o644)
	os.WriteFile(ep, []byte(events), 0o644)
	out := filepath.Join(dir, "out.csv")
	if err := google(up, ep, out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	want := "job_id,task_index,cpu_request,memory_request,cpu_ratio,cpu_max_ratio,memory_ratio\n" +
		"7,0,0.4,0.4,0.5,1.5,0.5\n" +
		"7,1,0.1,0.2,0.5,1,0.5\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	os.WriteFile(ep, []byte("0,2,8,0,1,0,u,3,9,,,,\n"), 0o644)
	if err := google(up, ep, out); err == nil || !strings.Contains(err.Error(), "no task") {
		t.Errorf("no request at all: error %v", err)
	}
}

// TestPlanetlab: VMs below the mean are dropped, the others kept unchanged; a file that is not
// a day of percentages is an error naming it.
func TestPlanetlab(t *testing.T) {
	dir := t.TempDir()
	day := func(v string) string { return strings.Repeat(v+"\n", 288) }
	os.WriteFile(filepath.Join(dir, "busy vm"), []byte(day("20")), 0o644)
	os.WriteFile(filepath.Join(dir, "idle"), []byte(day("2")), 0o644)
	out := filepath.Join(dir, "..", "pl.csv")
	if err := planetlab(dir, 10, out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if want := "busy_vm," + strings.TrimSuffix(strings.ReplaceAll(day("20"), "\n", ","), ",") + "\n"; string(got) != want {
		t.Errorf("got %q", got)
	}
	if got := planetlabFile("raw/planetlab/20110322/"); got != "planetlab-20110322.csv" {
		t.Errorf("the fixture of planetlab/20110322 is named %q", got)
	}
	os.WriteFile(filepath.Join(dir, "short"), []byte("1\n2\n"), 0o644)
	if err := planetlab(dir, 10, out); err == nil || !strings.Contains(err.Error(), "short") {
		t.Errorf("a short file: error %v", err)
	}
}
