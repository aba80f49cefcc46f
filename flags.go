package main

import "flag"

// parseInterspersed parses args with fs as fs.Parse does, but reads flags after the
// positional arguments too (extender explain default/web-1 --url ..., as kubectl and most
// command lines accept), and returns the positional arguments in their order. Go's flag
// package alone stops at the first argument that is not a flag and leaves every flag after it
// unread, as an argument. "--" ends the flags: what follows it is positional; "-" alone is
// positional (stdin, for convert-policy). Errors are fs.Parse's (an unknown flag, a bad value,
// flag.ErrHelp), already printed to fs's output.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			// fs.Parse stopped after "--" (not at a flag's value: it would have gone on).
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
