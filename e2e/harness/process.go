package harness

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StopTimeout is how long Stop waits after SIGTERM before it kills a process group.
const StopTimeout = 10 * time.Second

// Process is a child process the harness started, in its own process group, with its output
// in a log file.
type Process struct {
	// Name identifies the process in messages ("etcd", "kube-scheduler", "extender safe").
	Name string
	// LogPath is the file receiving the process's standard output and error.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error // the result of Wait, valid once done is closed

	stopOnce sync.Once
}

// StartProcess starts bin with args as a child in its own process group, its output appended to
// a log file in logDir. Its environment is env on top of PATH, HOME, TMPDIR, LANG and TZ of the
// harness's own and nothing else, so that a developer's KUBECONFIG or agent variables never
// reach a test's processes. The child gets SIGKILL if this process dies. A cleanup registered
// with t stops it (SIGTERM to the group, SIGKILL after StopTimeout) and, when the test has
// failed, prints the end of its log.
func StartProcess(t T, name, logDir, bin string, env []string, args ...string) *Process {
	t.Helper()
	p, err := startProcess(name, logDir, bin, env, args...)
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("--- last lines of %s's log (%s%s):\n%s", p.Name, p.LogPath, keepHint(), p.Tail(40))
		}
	})
	return p
}

func startProcess(name, logDir, bin string, env []string, args ...string) (*Process, error) {
	logName := strings.Map(func(r rune) rune {
		if r == ' ' || r == '/' {
			return '-'
		}
		return r
	}, name)
	logPath := filepath.Join(logDir, logName+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "==== %s: %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(baseEnv(), env...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// baseEnv is the part of the harness's environment its children inherit.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Pid returns the process id (also its process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done returns a channel closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop ends the process and everything in its process group: SIGTERM, then SIGKILL after
// StopTimeout. It waits for the process to end and is safe to call more than once.
func (p *Process) Stop() {
	p.stopOnce.Do(func() {
		pgid := p.cmd.Process.Pid
		if !p.Exited() {
			syscall.Kill(-pgid, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(StopTimeout):
			}
		}
		// Whatever is left in the group (the leader gone or not) gets SIGKILL.
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	})
}

// Kill ends the process group at once with SIGKILL and waits for the process to end.
func (p *Process) Kill() {
	p.stopOnce.Do(func() {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// exitError describes how the process ended, for messages.
func (p *Process) exitError() error {
	<-p.done
	if p.err == nil {
		return errors.New("exited with status 0")
	}
	return p.err
}

// FreePort returns a TCP port on 127.0.0.1 that was free when asked. Another process may take
// it before the caller binds it; the harness retries its own starts when that happens.
func FreePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free when asked. It holds every
// port's listener until all are chosen: asked one after the other, the kernel may hand out the
// same ephemeral port twice (it did, for etcd's client and peer ports, on a loaded machine).
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// MustFreePort is FreePort reporting failure through t.
func MustFreePort(t T) int {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	return port
}

// LogDir returns the directory for the logs of the processes t starts: $E2E_LOG_DIR/<test name>
// when E2E_LOG_DIR is set (the logs then outlive the run), a new t.TempDir() otherwise.
func LogDir(t T) string {
	t.Helper()
	base := os.Getenv("E2E_LOG_DIR")
	if base == "" {
		return t.TempDir()
	}
	dir := filepath.Join(base, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("log directory: %v", err)
	}
	return dir
}

// keepHint tells where to find whole logs after a failure.
func keepHint() string {
	if os.Getenv("E2E_LOG_DIR") != "" {
		return ""
	}
	return "; set E2E_LOG_DIR to keep whole logs"
}

// addressInUse reports whether a process's log says it could not bind its port.
func addressInUse(p *Process) bool {
	return strings.Contains(p.Tail(60), "address already in use")
}

// ClockTicks is USER_HZ, the unit of CPUTicks: 100 on every Linux architecture this runs on.
const ClockTicks = 100

// CPUTicks returns the user + system time of process pid and its threads, in clock ticks, from
// /proc/<pid>/stat; 0 when it cannot be read.
func CPUTicks(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return utime + stime
}

// Memory returns a process's resident memory and its peak, in MiB (VmRSS and VmHWM of
// /proc/<pid>/status).
func Memory(pid int) (rss, peak float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	if rss == 0 || peak == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status gives no VmRSS or VmHWM", pid)
	}
	return rss, peak, nil
}

// LoadAverage returns the machine's 1-minute load average, 0 when unknown.
func LoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
