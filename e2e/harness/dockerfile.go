package harness

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
)

// DockerBuild is the go build command a Dockerfile runs, as ParseDockerfile reads it.
type DockerBuild struct {
	// Dockerfile is the file's path.
	Dockerfile string
	// Line is the RUN instruction's command as written (continuation lines joined).
	Line string
	// Env are the VAR=value words before the go command, unexpanded (e.g. CGO_ENABLED=0).
	Env []string
	// Args are the words after "go" (build ...), unexpanded.
	Args []string
	// ArgDefaults are the defaults of the file's ARG instructions.
	ArgDefaults map[string]string
	// Tags are the -tags values.
	Tags []string
	// Output is the -o value.
	Output string
	// Dir is the directory the go build runs in, relative to the build context: the WORKDIR in
	// effect, relative to where the file copied the context (COPY . <dest>). "." for the root.
	Dir string
}

// ParseDockerfile reads a Dockerfile and returns its one RUN instruction that runs go build.
// It understands continuation lines, quotes, ARG defaults and commands joined with && or ;.
func ParseDockerfile(file string) (*DockerBuild, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	b := &DockerBuild{Dockerfile: file, ArgDefaults: map[string]string{}}
	var found []string
	// workdir is the WORKDIR in effect; context is where COPY . <dest> put the build context.
	workdir, context := "/", ""
	for _, inst := range instructions(string(data)) {
		keyword, rest, _ := strings.Cut(inst, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(keyword) {
		case "FROM":
			workdir = "/"
		case "WORKDIR":
			workdir = resolve(workdir, rest)
		case "COPY":
			if f := strings.Fields(rest); len(f) == 2 && f[0] == "." {
				context = resolve(workdir, f[1])
			}
		case "ARG":
			name, def, _ := strings.Cut(rest, "=")
			b.ArgDefaults[strings.TrimSpace(name)] = strings.Trim(strings.TrimSpace(def), `"'`)
		case "RUN":
			for _, cmd := range regexp.MustCompile(`&&|;`).Split(rest, -1) {
				if strings.Contains(cmd, "go build") {
					found = append(found, strings.TrimSpace(cmd))
					if context == "" {
						return nil, fmt.Errorf("%s: go build runs before the build context is copied (COPY . <dest>)", file)
					}
					rel, ok := strings.CutPrefix(workdir, strings.TrimSuffix(context, "/")+"/")
					switch {
					case workdir == context:
						b.Dir = "."
					case ok:
						b.Dir = rel
					default:
						return nil, fmt.Errorf("%s: go build runs in %s, outside the build context copied to %s", file, workdir, context)
					}
				}
			}
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%s: want exactly one go build command, found %d", file, len(found))
	}
	b.Line = found[0]
	words, err := shellWords(b.Line)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	assign := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	i := 0
	for i < len(words) && assign.MatchString(words[i]) {
		b.Env = append(b.Env, words[i])
		i++
	}
	if i+1 >= len(words) || words[i] != "go" || words[i+1] != "build" {
		return nil, fmt.Errorf("%s: %q does not run go build directly", file, b.Line)
	}
	b.Args = words[i+1:]
	for j := 0; j < len(b.Args); j++ {
		a := b.Args[j]
		value := func(flag string) (string, bool) {
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				return v, true
			}
			if a == flag && j+1 < len(b.Args) {
				j++
				return b.Args[j], true
			}
			return "", false
		}
		if v, ok := value("-tags"); ok {
			b.Tags = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
		} else if v, ok := value("-o"); ok {
			b.Output = v
		}
	}
	return b, nil
}

// resolve returns p, a Dockerfile path, made absolute against the WORKDIR workdir.
func resolve(workdir, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(workdir, p)
}

// Command returns the environment and the go arguments of the build, with build arguments
// expanded (buildArgs over the ARG defaults, as docker build --build-arg does) and the -o value
// replaced by output.
func (b *DockerBuild) Command(buildArgs map[string]string, output string) (env, args []string) {
	vars := map[string]string{}
	for k, v := range b.ArgDefaults {
		vars[k] = v
	}
	for k, v := range buildArgs {
		vars[k] = v
	}
	expand := func(s string) string { return os.Expand(s, func(k string) string { return vars[k] }) }
	for _, e := range b.Env {
		env = append(env, expand(e))
	}
	for j := 0; j < len(b.Args); j++ {
		a := b.Args[j]
		switch {
		case a == "-o" && j+1 < len(b.Args):
			args = append(args, "-o", output)
			j++
		case strings.HasPrefix(a, "-o="):
			args = append(args, "-o="+output)
		default:
			args = append(args, expand(a))
		}
	}
	return env, args
}

// instructions splits a Dockerfile into instructions: comments dropped, continuation lines
// joined.
func instructions(text string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\"))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(trimmed)
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// shellWords splits a command line into words the way sh does for plain words, single and
// double quotes and backslash escapes; it does not expand variables.
func shellWords(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
		quote  rune
	)
	for i := 0; i < len(s); i++ {
		ch := rune(s[i])
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else if ch == '\\' && quote == '"' && i+1 < len(s) && strings.ContainsRune(`"\$`, rune(s[i+1])) {
				i++
				cur.WriteByte(s[i])
			} else {
				cur.WriteRune(ch)
			}
		case ch == '\'' || ch == '"':
			quote, inWord = ch, true
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(ch)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
