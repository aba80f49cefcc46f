package framework

// Config is an agent's configuration: a struct whose fields carry the tags that bind them to
// environment variables and flags (package settings: env, flag, help) and to JSON (json, in
// camelCase, for a scheduler's pluginConfig args). Validate is the only check of its values;
// it reports every bad field as a settings.FieldError named by its JSON name, so that each
// program can name the field the way its users set it.
type Config interface {
	Validate() error
}

// Registration is what a program needs to know of an agent to offer it: its name (also its
// build tag), a fresh configuration holding every default, and its constructor. Programs keep
// an ordinary list of Registrations: the extender's build-tagged files add to it, one each.
type Registration struct {
	Name string
	// NewConfig returns a pointer to a new configuration holding every default, ready to be
	// filled by settings or JSON.
	NewConfig func() Config
	// New builds the agent from a configuration NewConfig returned.
	New func(cfg Config, h Handle) (Agent, error)
}

// Register returns the Registration of the agent called name, whose configuration type is C
// (DefaultConfig returning every default) and whose constructor is newAgent. It is the one
// place where the agent's typed configuration meets the untyped list: newAgent receives
// exactly what NewConfig made.
func Register[C any, P interface {
	*C
	Config
}, A Agent](name string, defaultConfig func() C, newAgent func(C, Handle) (A, error)) Registration {
	return Registration{
		Name:      name,
		NewConfig: func() Config { c := defaultConfig(); return P(&c) },
		New: func(cfg Config, h Handle) (Agent, error) {
			a, err := newAgent(*cfg.(P), h)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
	}
}
