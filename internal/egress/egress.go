// Package egress guards wf's outbound requests (http(s) ingestion sources,
// webhook deliveries): it refuses to connect to loopback, private,
// link-local (cloud metadata), shared (CGNAT), multicast, unspecified and
// other special-purpose addresses unless the configuration allow-lists
// them. The check runs on the address actually dialled, in the dialer's
// Control hook, after name resolution: a name that resolves (or is
// re-bound) to a refused address is refused too. Every failure to connect,
// whether refused here, closed or silent, gives the same error, so a task's
// error tells nothing about what listens where.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ErrUnreachable is the one error of every failed connection.
var ErrUnreachable = errors.New("the destination cannot be reached")

// blocked are the address ranges no outbound request reaches unless
// allow-listed (IANA special-purpose registries).
var blocked = mustPrefixes(
	"0.0.0.0/8",       // "this network", unspecified
	"10.0.0.0/8",      // private
	"100.64.0.0/10",   // shared address space (CGNAT)
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, cloud metadata
	"172.16.0.0/12",   // private
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // documentation
	"192.168.0.0/16",  // private
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // documentation
	"203.0.113.0/24",  // documentation
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, broadcast
	"::/128",          // unspecified
	"::1/128",         // loopback
	"64:ff9b:1::/48",  // local-use NAT64
	"100::/64",        // discard
	"2001:db8::/32",   // documentation
	"fc00::/7",        // unique local
	"fe80::/10",       // link-local
	"ff00::/8",        // multicast
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Policy decides which addresses outbound requests may reach.
type Policy struct {
	allow []netip.Prefix
}

// NewPolicy returns the policy that refuses the special-purpose ranges
// except the allow-listed prefixes (CIDRs such as 127.0.0.0/8, or single
// addresses).
func NewPolicy(allow []string) (*Policy, error) {
	p := &Policy{}
	for _, s := range allow {
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("error reading the outbound allow-list: %q is not a CIDR prefix or an address", s)
			}
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		p.allow = append(p.allow, pfx.Masked())
	}
	return p, nil
}

// Allowed reports whether an address may be connected to.
func (p *Policy) Allowed(a netip.Addr) bool {
	a = a.Unmap()
	for _, pfx := range p.allow {
		if pfx.Contains(a) {
			return true
		}
	}
	for _, pfx := range blocked {
		if pfx.Contains(a) {
			return false
		}
	}
	return a.IsValid()
}

// control is the dialer's Control hook: it refuses a connection to an
// address the policy does not allow, before it is made.
func (p *Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !p.Allowed(ap.Addr()) {
		return ErrUnreachable
	}
	return nil
}

// Dialer returns a dialer that connects only where the policy allows.
func (p *Policy) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.control}
}

// DialContext dials like the policy's Dialer and gives ErrUnreachable for
// every failure (refused by the policy, closed port, silent host, unknown
// name), naming only the address asked for.
func (p *Policy) DialContext(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := p.Dialer(timeout)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, fmt.Errorf("error connecting to %s: %w", addr, ErrUnreachable)
		}
		return c, nil
	}
}

// Transport returns an HTTP transport that connects only where the policy
// allows. It uses no proxy: a proxy would connect on its behalf, unchecked.
func (p *Policy) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = p.DialContext(10 * time.Second)
	return t
}

// Client returns an HTTP client on the policy's Transport that does not
// follow redirects (a redirect is the destination's answer, not a new
// destination to trust) and gives up after timeout (0: none).
func (p *Policy) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     p.Transport(),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckHost fails with ErrUnreachable when host is a refused address, a
// localhost name, or a name that resolves to a refused address: for
// checking a URL when it is registered (wf webhooks add). A name that does
// not resolve now is let through; every connection is checked again when it
// is made, on the address it reaches.
func (p *Policy) CheckHost(ctx context.Context, host string) error {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if !p.Allowed(a) {
			return fmt.Errorf("%s is a loopback, private, link-local or other special-purpose address: %w", host, ErrUnreachable)
		}
		return nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		if !p.Allowed(netip.MustParseAddr("127.0.0.1")) {
			return fmt.Errorf("%s is a loopback name: %w", host, ErrUnreachable)
		}
		return nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if !p.Allowed(a) {
			return fmt.Errorf("%s resolves to %s, a loopback, private, link-local or other special-purpose address: %w", host, a, ErrUnreachable)
		}
	}
	return nil
}
