package dashboard

import (
	"fmt"
	"net"
	"net/netip"
)

// Listen opens addr for the dashboard. Unless Options.AllowRemote, addr
// must name a loopback address (127.0.0.0/8, ::1 or "localhost"): the
// dashboard has no authentication, and an empty host (":8080") means every
// interface.
func (s *Server) Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard address %q is not host:port: %w", addr, err)
	}
	if !s.opts.AllowRemote && !isLoopback(host) {
		return nil, fmt.Errorf("dashboard address %q is not a loopback address (use 127.0.0.1, [::1] or localhost, or allow remote access explicitly)", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s for the dashboard: %w", addr, err)
	}
	// "localhost" is resolved by the system: check what was really bound.
	if ta, ok := l.Addr().(*net.TCPAddr); ok && !s.opts.AllowRemote && !ta.IP.IsLoopback() {
		l.Close()
		return nil, fmt.Errorf("dashboard address %q resolved to %s, which is not a loopback address", addr, ta.IP)
	}
	return l, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
