package harness

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// ReadObjects decodes every object of a multi-document YAML (or JSON) stream, skipping empty
// documents.
func ReadObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("document %d: no kind or apiVersion", i+1)
		}
		out = append(out, u)
	}
}

// Deployment is what a deployment file of yamlfiles/ says about running a scheduler with
// extenders: a ConfigMap holding a KubeSchedulerConfiguration and a Deployment whose pod runs
// kube-scheduler with that file plus one sidecar container per extender.
type Deployment struct {
	// Source names where it was read from, for messages.
	Source string
	// Objects are every object of the file, in order.
	Objects []*unstructured.Unstructured
	// Deployment is the file's Deployment; ConfigMap the ConfigMap its scheduler reads.
	Deployment *appsv1.Deployment
	ConfigMap  *corev1.ConfigMap
	// ConfigKey is the ConfigMap key holding the scheduler's configuration.
	ConfigKey string
	// SchedulerConfig is the KubeSchedulerConfiguration, as the scheduler container reads it.
	SchedulerConfig []byte
	// Scheduler is the kube-scheduler container; Sidecars are the others, in order.
	Scheduler corev1.Container
	Sidecars  []corev1.Container
}

// LoadDeploymentFile reads a deployment file (see Deployment).
func LoadDeploymentFile(file string) (*Deployment, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return LoadDeployment(filepath.Base(file), data)
}

// LoadDeployment decodes a deployment file (see Deployment). It fails unless the file holds
// exactly one Deployment whose kube-scheduler container's --config flag names a file mounted from
// a ConfigMap of the same file, and every sidecar serves on the containerPort its HTTP_PORT
// names.
func LoadDeployment(source string, data []byte) (*Deployment, error) {
	objs, err := ReadObjects(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	d := &Deployment{Source: source, Objects: objs}
	configMaps := map[string]*corev1.ConfigMap{}
	for _, o := range objs {
		switch o.GroupVersionKind().GroupKind().String() {
		case "Deployment.apps":
			if d.Deployment != nil {
				return nil, fmt.Errorf("%s: more than one Deployment", source)
			}
			d.Deployment = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d.Deployment); err != nil {
				return nil, fmt.Errorf("%s: Deployment: %w", source, err)
			}
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cm); err != nil {
				return nil, fmt.Errorf("%s: ConfigMap: %w", source, err)
			}
			configMaps[cm.Name] = cm
		}
	}
	if d.Deployment == nil {
		return nil, fmt.Errorf("%s: no Deployment", source)
	}
	spec := d.Deployment.Spec.Template.Spec
	found := false
	for _, c := range spec.Containers {
		if isScheduler(c) {
			if found {
				return nil, fmt.Errorf("%s: more than one kube-scheduler container", source)
			}
			d.Scheduler, found = c, true
		} else {
			d.Sidecars = append(d.Sidecars, c)
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: no kube-scheduler container (image registry.k8s.io/kube-scheduler, or %s)", source, PluginScheduler)
	}
	configPath := flagValue(schedulerArgs(d.Scheduler), "config")
	if configPath == "" {
		return nil, fmt.Errorf("%s: the kube-scheduler container has no --config flag", source)
	}
	d.ConfigMap, d.ConfigKey, err = mountedConfigMap(spec, d.Scheduler, configPath, configMaps)
	if err != nil {
		return nil, fmt.Errorf("%s: --config=%s: %w", source, configPath, err)
	}
	d.SchedulerConfig = []byte(d.ConfigMap.Data[d.ConfigKey])
	for _, c := range d.Sidecars {
		if _, err := SidecarPort(c); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
	}
	return d, nil
}

// PluginScheduler is the executable and image name of the scheduler with the agents compiled in
// as plugins (dockerfiles/Dockerfile.scheduler).
const PluginScheduler = "kube-safe-scheduler"

func isScheduler(c corev1.Container) bool {
	image := imageName(c.Image)
	return strings.HasSuffix(image, "/kube-scheduler") || IsPluginScheduler(c) ||
		(len(c.Command) > 0 && path.Base(c.Command[0]) == "kube-scheduler")
}

// IsPluginScheduler reports whether the container runs the plugin scheduler (image or command
// kube-safe-scheduler) rather than kube-scheduler.
func IsPluginScheduler(c corev1.Container) bool {
	image := imageName(c.Image)
	return image == PluginScheduler || strings.HasSuffix(image, "/"+PluginScheduler) ||
		(len(c.Command) > 0 && path.Base(c.Command[0]) == PluginScheduler)
}

// imageName returns image without its tag.
func imageName(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// schedulerArgs returns the container's command line after the executable.
func schedulerArgs(c corev1.Container) []string {
	all := append(slices.Clone(c.Command), c.Args...)
	if len(all) > 0 && (path.Base(all[0]) == "kube-scheduler" || path.Base(all[0]) == PluginScheduler) {
		all = all[1:]
	}
	return all
}

// flagValue returns the value of --name=value or --name value in args, "" when absent.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// mountedConfigMap finds the ConfigMap, and its key, that the container sees at file.
func mountedConfigMap(spec corev1.PodSpec, c corev1.Container, file string, cms map[string]*corev1.ConfigMap) (*corev1.ConfigMap, string, error) {
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		if m.SubPath != "" {
			return nil, "", errors.New("subPath mounts are not supported")
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name {
				continue
			}
			if v.ConfigMap == nil {
				return nil, "", fmt.Errorf("volume %s is not a ConfigMap", v.Name)
			}
			cm, ok := cms[v.ConfigMap.Name]
			if !ok {
				return nil, "", fmt.Errorf("ConfigMap %s (volume %s) is not in the file", v.ConfigMap.Name, v.Name)
			}
			key := rel
			if len(v.ConfigMap.Items) > 0 {
				key = ""
				for _, it := range v.ConfigMap.Items {
					if it.Path == rel {
						key = it.Key
					}
				}
			}
			if _, ok := cm.Data[key]; !ok || key == "" {
				return nil, "", fmt.Errorf("ConfigMap %s has no key for %s", cm.Name, rel)
			}
			return cm, key, nil
		}
		return nil, "", fmt.Errorf("volume %s is not in the pod", m.Name)
	}
	return nil, "", errors.New("no volume is mounted there")
}

// EnvValue returns the value of the container's environment variable name and whether it is set
// (by value; valueFrom is not resolved).
func EnvValue(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, e.ValueFrom == nil
		}
	}
	return "", false
}

// SidecarPort returns the port an extender sidecar serves on: its HTTP_PORT, a port number or
// host:port (127.0.0.1:5401), whose port must be one of its containerPorts.
func SidecarPort(c corev1.Container) (int, error) {
	v, ok := EnvValue(c, "HTTP_PORT")
	if !ok {
		return 0, fmt.Errorf("container %s: no HTTP_PORT value", c.Name)
	}
	p := v
	if _, hp, err := net.SplitHostPort(v); err == nil {
		p = hp
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return 0, fmt.Errorf("container %s: HTTP_PORT %q is neither a port number nor host:port", c.Name, v)
	}
	for _, p := range c.Ports {
		if int(p.ContainerPort) == port {
			return port, nil
		}
	}
	return 0, fmt.Errorf("container %s: HTTP_PORT %d is not among its containerPorts", c.Name, port)
}

// ImageTags returns the build tags of an extender image named kube-sched-ext-<x>: those of the
// go build line of dockerfiles/Dockerfile.<x>, which builds that image.
func ImageTags(image string) ([]string, error) {
	name := image
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	name = path.Base(name)
	x, ok := strings.CutPrefix(name, "kube-sched-ext-")
	if !ok {
		return nil, fmt.Errorf("image %s is not an extender image (kube-sched-ext-<agent>)", image)
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	b, err := ParseDockerfile(filepath.Join(root, "dockerfiles", "Dockerfile."+x))
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", image, err)
	}
	return b.Tags, nil
}

// RunOptions adjust RunDeployment.
type RunOptions struct {
	// Kubeconfig stands in for the pod's service account: the scheduler and every sidecar
	// connect with it (sidecars through KUBECONFIG). Default: the cluster's admin kubeconfig.
	Kubeconfig string
	// Env overrides or adds environment variables per container name (a sidecar's, or the
	// scheduler container's, whose literal env values the harness passes on as well).
	Env map[string]map[string]string
	// Binary overrides the extender executable per sidecar container name; by default each
	// sidecar runs BuildExtender with its image's tags (see ImageTags).
	Binary map[string]string
	// Skip names sidecars not to start (their ports are still mapped, to closed ports).
	Skip []string
	// SchedulerArgs are appended to the scheduler container's own flags.
	SchedulerArgs []string
	// Secrets hold the data of the Secrets the pod mounts (Secret name -> key -> content), as
	// the API server would give them: the harness writes each mounted Secret's keys into a
	// directory of its own and points the paths under the mount the containers are given
	// (env values, arguments, exec probe commands, the scheduler configuration's tlsConfig
	// files) there. A mounted Secret missing here is an error.
	Secrets map[string]map[string][]byte
	// SchedulerPort, when set, gives the port kube-scheduler reaches sidecar container on, from
	// the loopback port that sidecar serves on: a test puts a proxy between them (delays,
	// faults) and returns the proxy's port.
	SchedulerPort func(container string, port int) int
}

// RunningDeployment is a deployment file running as local processes.
type RunningDeployment struct {
	*Deployment
	Scheduler *Scheduler
	// Extenders are the running sidecars by container name.
	Extenders map[string]*Extender
	// Ports maps each port of the pod (as the file gives it) to the loopback port standing in
	// for it.
	Ports map[int]int
	// Config is the KubeSchedulerConfiguration the scheduler runs: the file's, with extender
	// URLs pointed at the local ports, tlsConfig files at the local copies of the Secrets (and
	// its kubeconfig path set).
	Config []byte
	// secretDirs maps each Secret volume of the pod to the directory holding its files.
	secretDirs map[string]string
	generation int
	// extenderOpts are the options each sidecar was started with, for RestartExtender.
	extenderOpts map[string]ExtenderOptions
}

// RestartExtender starts sidecar name again, after it was killed or stopped, with the same
// binary, environment, arguments and port, as the kubelet restarts a container, and returns it
// once it is ready (r.Extenders holds the new process).
func (r *RunningDeployment) RestartExtender(t T, name string) *Extender {
	t.Helper()
	opts, ok := r.extenderOpts[name]
	if !ok {
		t.Fatalf("%s: no sidecar %s was started", r.Source, name)
	}
	if old := r.Extenders[name]; old != nil && !old.Exited() {
		t.Fatalf("%s: sidecar %s is still running", r.Source, name)
	}
	e := StartExtender(t, opts)
	r.Extenders[name] = e
	return e
}

// writeSecrets writes the data of every Secret volume of the pod into a directory under dir,
// laid out as the kubelet does (see writeVolume).
func (r *RunningDeployment) writeSecrets(dir string, secrets map[string]map[string][]byte) error {
	for _, v := range r.Deployment.Deployment.Spec.Template.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		data, ok := secrets[v.Secret.SecretName]
		if !ok {
			return fmt.Errorf("volume %s: Secret %s: give its data in RunOptions.Secrets", v.Name, v.Secret.SecretName)
		}
		local := filepath.Join(dir, v.Name)
		if err := os.MkdirAll(local, 0o700); err != nil {
			return err
		}
		r.secretDirs[v.Name] = local
		if err := r.writeVolume(v, data); err != nil {
			return err
		}
	}
	return nil
}

// UpdateSecret replaces the data of Secret name in every volume that mounts it, as the kubelet
// does when the Secret changes: the new files go to a new directory, then one symlink swap
// (..data) makes them visible at once.
func (r *RunningDeployment) UpdateSecret(t T, name string, data map[string][]byte) {
	t.Helper()
	found := false
	for _, v := range r.Deployment.Deployment.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			found = true
			if err := r.writeVolume(v, data); err != nil {
				t.Fatalf("updating Secret %s: %v", name, err)
			}
		}
	}
	if !found {
		t.Fatalf("no volume of %s mounts Secret %s", r.Source, name)
	}
}

// writeVolume writes a Secret volume's files the kubelet's way: into a new directory
// ..<generation>, then the symlink ..data is swapped to it, and each file is a symlink through
// ..data.
func (r *RunningDeployment) writeVolume(v corev1.Volume, data map[string][]byte) error {
	local := r.secretDirs[v.Name]
	files := map[string]string{} // path in the volume -> key
	for k := range data {
		files[k] = k
	}
	if len(v.Secret.Items) > 0 {
		files = map[string]string{}
		for _, it := range v.Secret.Items {
			if _, ok := data[it.Key]; !ok {
				return fmt.Errorf("volume %s: Secret %s has no key %s", v.Name, v.Secret.SecretName, it.Key)
			}
			files[it.Path] = it.Key
		}
	}
	r.generation++
	gen := fmt.Sprintf("..%d", r.generation)
	for path, key := range files {
		p := filepath.Join(local, gen, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, data[key], 0o600); err != nil {
			return err
		}
		top := strings.SplitN(path, "/", 2)[0]
		if _, err := os.Lstat(filepath.Join(local, top)); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", top), filepath.Join(local, top)); err != nil {
				return err
			}
		}
	}
	tmp := filepath.Join(local, "..data_tmp")
	if err := os.Symlink(gen, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(local, "..data"))
}

// localPath returns where the harness keeps the file that container c sees at p when p lies
// under one of its Secret mounts, and p unchanged otherwise.
func (r *RunningDeployment) localPath(c corev1.Container, p string) string {
	for _, m := range c.VolumeMounts {
		local, ok := r.secretDirs[m.Name]
		if !ok {
			continue
		}
		mount := strings.TrimSuffix(m.MountPath, "/")
		if rel, ok := strings.CutPrefix(p, mount+"/"); ok {
			return filepath.Join(local, m.SubPath, rel)
		}
		if p == mount {
			return filepath.Join(local, m.SubPath)
		}
	}
	return p
}

// localArg maps a command-line argument of container c: a URL of the pod's own address to the
// local port standing in for its port, a file path (alone or as --flag=path) under a Secret
// mount to the local copy.
func (r *RunningDeployment) localArg(c corev1.Container, a string) string {
	if u, err := url.Parse(a); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		if h := u.Hostname(); h == "localhost" || h == "127.0.0.1" {
			if port, err := strconv.Atoi(u.Port()); err == nil {
				if local, ok := r.Ports[port]; ok {
					u.Host = "127.0.0.1:" + strconv.Itoa(local)
					return u.String()
				}
			}
		}
		return a
	}
	if name, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") {
		return name + "=" + r.localPath(c, value)
	}
	return r.localPath(c, a)
}

// extenderProbe is an exec probe that runs the extender's own probe subcommand
// (/extender probe [flags] URL), with its arguments mapped to the local ports and files.
type extenderProbe struct {
	args []string // after "probe", mapped
	url  *url.URL // mapped
}

func (r *RunningDeployment) probeCommand(c corev1.Container, p *corev1.Probe) (*extenderProbe, error) {
	cmd := p.Exec.Command
	if len(cmd) < 3 || cmd[0] != "/extender" || cmd[1] != "probe" {
		return nil, fmt.Errorf("exec probe %q: the harness runs only the extender's probe subcommand (/extender probe [flags] URL)", cmd)
	}
	pc := &extenderProbe{}
	for _, a := range cmd[2:] {
		pc.args = append(pc.args, r.localArg(c, a))
	}
	u, err := url.Parse(pc.args[len(pc.args)-1])
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("exec probe %q: the last argument is not a URL", cmd)
	}
	if u.String() == cmd[len(cmd)-1] {
		return nil, fmt.Errorf("exec probe %q: its URL is not on a port of the pod's sidecars", cmd)
	}
	pc.url = u
	return pc, nil
}

// clientTLS is the client configuration the probe's flags describe.
func (pc *extenderProbe) clientTLS() (*tls.Config, error) {
	c := &tls.Config{}
	if ca := flagValue(pc.args, "ca-file"); ca != "" {
		data, err := os.ReadFile(ca)
		if err != nil {
			return nil, err
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("%s holds no PEM certificate", ca)
		}
	}
	if cert := flagValue(pc.args, "cert-file"); cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, flagValue(pc.args, "key-file"))
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// rewriteExtenderTLSFiles returns config with each extender's tlsConfig certFile, keyFile and
// caFile replaced by local(path), and nothing else changed.
func rewriteExtenderTLSFiles(config []byte, local func(string) string) ([]byte, error) {
	var m map[string]any
	if err := yaml.Unmarshal(config, &m); err != nil {
		return nil, fmt.Errorf("KubeSchedulerConfiguration: %w", err)
	}
	exts, _ := m["extenders"].([]any)
	for _, e := range exts {
		ext, _ := e.(map[string]any)
		tc, _ := ext["tlsConfig"].(map[string]any)
		for _, k := range []string{"certFile", "keyFile", "caFile"} {
			if p, ok := tc[k].(string); ok && p != "" {
				tc[k] = local(p)
			}
		}
	}
	return yaml.Marshal(m)
}

// RunDeployment runs a deployment file's pod as local processes against the cluster: every
// sidecar as an extender process with the container's env and arguments, and kube-scheduler with
// the container's flags and the ConfigMap's configuration (the plugin scheduler, BuildPluginScheduler,
// for a kube-safe-scheduler container). What a pod would give them differently
// is changed and nothing else: ports are remapped to free loopback ports (HTTP_PORT and the
// extenders' urlPrefix, whose host must be localhost or 127.0.0.1, as in a pod), the
// configuration's kubeconfig path is set and --secure-port/--bind-address chosen, and
// opts.Kubeconfig stands in for the service account (KUBECONFIG for the sidecars,
// --authentication-kubeconfig and --authorization-kubeconfig for the scheduler). Everything is
// stopped when t's cleanups run.
func (c *Cluster) RunDeployment(t T, d *Deployment, opts RunOptions) *RunningDeployment {
	t.Helper()
	kubeconfig := opts.Kubeconfig
	if kubeconfig == "" {
		kubeconfig = c.Kubeconfig
	}
	r := &RunningDeployment{Deployment: d, Extenders: map[string]*Extender{}, Ports: map[int]int{}, secretDirs: map[string]string{},
		extenderOpts: map[string]ExtenderOptions{}}
	free, err := FreePorts(len(d.Sidecars))
	if err != nil {
		t.Fatalf("free ports for %s's sidecars: %v", d.Source, err)
	}
	for i, sc := range d.Sidecars {
		port, _ := SidecarPort(sc)
		r.Ports[port] = free[i]
	}
	if err := r.writeSecrets(t.TempDir(), opts.Secrets); err != nil {
		t.Fatalf("%s: %v", d.Source, err)
	}
	for _, sc := range d.Sidecars {
		if slices.Contains(opts.Skip, sc.Name) {
			continue
		}
		if len(sc.Command) > 0 && !(len(sc.Command) == 1 && sc.Command[0] == "/extender") {
			t.Fatalf("%s: container %s: command %q: the harness runs the extender image's entrypoint only", d.Source, sc.Name, sc.Command)
		}
		bin := opts.Binary[sc.Name]
		if bin == "" {
			tags, err := ImageTags(sc.Image)
			if err != nil {
				t.Fatalf("%s: container %s: %v", d.Source, sc.Name, err)
			}
			bin = BuildExtender(t, tags...)
		}
		env := map[string]string{"KUBECONFIG": kubeconfig}
		for _, e := range sc.Env {
			if e.ValueFrom != nil {
				t.Fatalf("%s: container %s: env %s uses valueFrom, which the harness does not resolve", d.Source, sc.Name, e.Name)
			}
			env[e.Name] = r.localPath(sc, e.Value)
		}
		for k, v := range opts.Env[sc.Name] {
			env[k] = v
		}
		args := make([]string, len(sc.Args))
		for i, a := range sc.Args {
			args[i] = r.localArg(sc, a)
		}
		port, _ := SidecarPort(sc)
		ready := "/readyz"
		var clientTLS *tls.Config
		if p := sc.ReadinessProbe; p != nil && p.HTTPGet != nil {
			ready = p.HTTPGet.Path
		} else if p != nil && p.Exec != nil {
			// The readiness probe runs the extender's probe subcommand: wait for the URL it
			// checks, with the client certificate it presents.
			pc, err := r.probeCommand(sc, p)
			if err != nil {
				t.Fatalf("%s: container %s: readiness probe: %v", d.Source, sc.Name, err)
			}
			ready = pc.url.Path
			if pc.url.Scheme == "https" {
				if clientTLS, err = pc.clientTLS(); err != nil {
					t.Fatalf("%s: container %s: readiness probe: %v", d.Source, sc.Name, err)
				}
			}
		}
		eo := ExtenderOptions{
			Name: "extender " + sc.Name, Binary: bin, Env: env, Args: args, Port: r.Ports[port], ReadyPath: ready, TLS: clientTLS,
		}
		r.extenderOpts[sc.Name] = eo
		r.Extenders[sc.Name] = StartExtender(t, eo)
	}

	cfg, err := RewriteExtenderURLs(d.SchedulerConfig, func(prefix string) (string, error) {
		u, err := url.Parse(prefix)
		if err != nil {
			return "", err
		}
		if h := u.Hostname(); h != "localhost" && h != "127.0.0.1" {
			return "", fmt.Errorf("urlPrefix %s: host %q is not the pod's own (localhost)", prefix, h)
		}
		port, _ := strconv.Atoi(u.Port())
		local, ok := r.Ports[port]
		if !ok {
			return "", fmt.Errorf("urlPrefix %s: port %d is no sidecar's HTTP_PORT", prefix, port)
		}
		if opts.SchedulerPort != nil {
			for _, sc := range d.Sidecars {
				if p, _ := SidecarPort(sc); p == port {
					local = opts.SchedulerPort(sc.Name, local)
				}
			}
		}
		u.Host = "127.0.0.1:" + strconv.Itoa(local)
		return u.String(), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", d.Source, err)
	}
	if cfg, err = rewriteExtenderTLSFiles(cfg, func(p string) string { return r.localPath(d.Scheduler, p) }); err != nil {
		t.Fatalf("%s: %v", d.Source, err)
	}
	var args []string
	skip := false
	for _, a := range schedulerArgs(d.Scheduler) {
		if skip {
			skip = false
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "config", "secure-port", "bind-address", "kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig":
			skip = !hasValue
			continue
		}
		args = append(args, a)
	}
	args = append(args, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
	args = append(args, opts.SchedulerArgs...)
	opt := SchedulerOptions{Config: cfg, Kubeconfig: kubeconfig, Args: args}
	for _, e := range d.Scheduler.Env {
		if e.ValueFrom != nil {
			t.Fatalf("%s: container %s: env %s uses valueFrom, which the harness does not resolve", d.Source, d.Scheduler.Name, e.Name)
		}
		opt.Env = append(opt.Env, e.Name+"="+e.Value)
	}
	for k, v := range opts.Env[d.Scheduler.Name] {
		opt.Env = append(opt.Env, k+"="+v)
	}
	if IsPluginScheduler(d.Scheduler) {
		opt.Name, opt.Binary = PluginScheduler, BuildPluginScheduler(t)
	}
	r.Scheduler = c.StartScheduler(t, opt)
	r.Config, err = SetSchedulerKubeconfig(cfg, kubeconfig)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return r
}

// ProbeTimeout bounds how long CheckProbes waits for a probe to answer 200.
const ProbeTimeout = 60 * time.Second

// CheckProbes requests every HTTP liveness, readiness and startup probe of the running containers
// on its local port, again and again as the kubelet would, and fails t unless each answers 200
// within ProbeTimeout.
func (r *RunningDeployment) CheckProbes(t T) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // self-signed on loopback
	check := func(c corev1.Container, kind string, p *corev1.Probe, port int) {
		if p == nil || p.HTTPGet == nil {
			return
		}
		want := p.HTTPGet.Port
		containerPort := want.IntValue()
		if want.Type == intstr.String {
			containerPort = 0
			for _, cp := range c.Ports {
				if cp.Name == want.StrVal {
					containerPort = int(cp.ContainerPort)
				}
			}
		}
		if containerPort == 0 {
			t.Fatalf("%s: container %s: %s probe port %s matches no containerPort", r.Source, c.Name, kind, want.String())
		}
		local := port
		if local == 0 {
			local = r.Ports[containerPort]
		}
		scheme := strings.ToLower(string(p.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		u := fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, local, p.HTTPGet.Path)
		// Like the kubelet, keep probing: a component may take a moment to become ready.
		deadline := time.Now().Add(ProbeTimeout)
		for {
			resp, err := client.Get(u)
			status := 0
			if err == nil {
				resp.Body.Close()
				status = resp.StatusCode
			}
			if status == http.StatusOK {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: container %s: %s probe %s failed for %s: status %d, error %v", r.Source, c.Name, kind, u, ProbeTimeout, status, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	// An exec probe runs the sidecar's binary with the probe's arguments (mapped), as the
	// kubelet runs the command in the container.
	checkExec := func(c corev1.Container, kind string, p *corev1.Probe) {
		if p == nil || p.Exec == nil {
			return
		}
		pc, err := r.probeCommand(c, p)
		if err != nil {
			t.Fatalf("%s: container %s: %s probe: %v", r.Source, c.Name, kind, err)
		}
		bin := r.Extenders[c.Name].Binary
		deadline := time.Now().Add(ProbeTimeout)
		for {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			out, err := exec.CommandContext(ctx, bin, append([]string{"probe"}, pc.args...)...).CombinedOutput()
			cancel()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: container %s: %s probe %s probe %q failed for %s: %v: %s", r.Source, c.Name, kind, bin, pc.args, ProbeTimeout, err, out)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	for _, c := range r.Sidecars {
		if _, running := r.Extenders[c.Name]; !running {
			continue
		}
		check(c, "liveness", c.LivenessProbe, 0)
		check(c, "readiness", c.ReadinessProbe, 0)
		check(c, "startup", c.StartupProbe, 0)
		checkExec(c, "liveness", c.LivenessProbe)
		checkExec(c, "readiness", c.ReadinessProbe)
		checkExec(c, "startup", c.StartupProbe)
	}
	// The scheduler's probes must target its secure port (10259 unless --secure-port says
	// otherwise), remapped here.
	s := r.Deployment.Scheduler
	securePort := flagValue(schedulerArgs(s), "secure-port")
	if securePort == "" {
		securePort = "10259"
	}
	for kind, p := range map[string]*corev1.Probe{"liveness": s.LivenessProbe, "readiness": s.ReadinessProbe, "startup": s.StartupProbe} {
		if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.String() != securePort {
			t.Fatalf("%s: container %s: %s probe port %s is not its secure port %s", r.Source, s.Name, kind, p.HTTPGet.Port.String(), securePort)
		}
	}
	check(s, "liveness", s.LivenessProbe, r.Scheduler.Port)
	check(s, "readiness", s.ReadinessProbe, r.Scheduler.Port)
	check(s, "startup", s.StartupProbe, r.Scheduler.Port)
}
