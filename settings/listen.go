package settings

import (
	"fmt"
	"net"
	"strconv"
)

// CheckListen accepts a listen setting: a port (8080) or host:port (127.0.0.1:8080, :8080).
func CheckListen(v string) error {
	if _, err := strconv.ParseUint(v, 10, 16); err == nil {
		return nil
	}
	if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
		return fmt.Errorf("%q is neither a port nor host:port", v)
	}
	return nil
}

// ListenAddress returns the address to listen on for a listen setting: ":<port>" for a bare
// port, the setting itself otherwise.
func ListenAddress(v string) string {
	if _, err := strconv.ParseUint(v, 10, 16); err == nil {
		return ":" + v
	}
	return v
}
