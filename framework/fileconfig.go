package framework

// FileConfig is a Config that also reads a file of its own (pigeon's pigeon.cfg), filling the
// settings that explicit reports as not given (explicit takes a setting's env tag). Both programs
// call it once, after reading the configuration: the extender with its flags and variables
// (settings.Set.Explicit), kube-safe-scheduler with the fields of the plugin's args.
type FileConfig interface {
	Config
	ApplyFile(explicit func(env string) bool) error
}
