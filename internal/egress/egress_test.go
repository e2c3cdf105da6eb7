package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/egress"
)

func TestAllowed(t *testing.T) {
	t.Parallel()
	p, err := egress.NewPolicy(nil)
	require.NoError(t, err)
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
		"224.0.0.1", "0.0.0.0", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254"} {
		require.False(t, p.Allowed(netip.MustParseAddr(a)), a)
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "100.128.0.1", "172.32.0.1"} {
		require.True(t, p.Allowed(netip.MustParseAddr(a)), a)
	}
	lo, err := egress.NewPolicy([]string{"127.0.0.0/8", "fd00::1"})
	require.NoError(t, err)
	require.True(t, lo.Allowed(netip.MustParseAddr("127.0.0.2")))
	require.True(t, lo.Allowed(netip.MustParseAddr("fd00::1")))
	require.False(t, lo.Allowed(netip.MustParseAddr("fd00::2")))
	_, err = egress.NewPolicy([]string{"not-a-cidr"})
	require.Error(t, err)
}

// TestSameErrorForRefusedClosedAndSilent: a refused address, a closed port
// and a host that never answers fail with the same words, so the errors
// are no port scanner.
func TestSameErrorForRefusedClosedAndSilent(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	// A closed port on loopback.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())

	strict, err := egress.NewPolicy(nil)
	require.NoError(t, err)
	// 192.0.2.0/24 is allow-listed here to stand for a silent host: nothing
	// answers there (or the network says it is unreachable).
	open, err := egress.NewPolicy([]string{"127.0.0.0/8", "192.0.2.0/24"})
	require.NoError(t, err)

	get := func(p *egress.Policy, url string) error {
		c := p.Client(0)
		c.Transport.(*http.Transport).DialContext = p.DialContext(300 * time.Millisecond)
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		require.NoError(t, err)
		res, err := c.Do(req)
		if err == nil {
			_ = res.Body.Close()
		}
		return err
	}
	require.NoError(t, get(open, srv.URL), "an allow-listed address is reached")

	words := func(err error, addr string) string {
		require.ErrorIs(t, err, egress.ErrUnreachable)
		return strings.ReplaceAll(err.Error(), addr, "ADDR")
	}
	srvAddr := strings.TrimPrefix(srv.URL, "http://")
	refused := words(get(strict, srv.URL), srvAddr)
	require.Equal(t, refused, words(get(open, "http://"+closed), closed))
	require.Equal(t, refused, words(get(open, "http://192.0.2.1:81"), "192.0.2.1:81"))
	require.Equal(t, refused, words(get(strict, "http://169.254.169.254:80"), "169.254.169.254:80"))
	require.True(t, errors.Is(get(strict, "http://localhost:"+strings.Split(srvAddr, ":")[1]), egress.ErrUnreachable), "a name resolving to loopback")
}

func TestCheckHost(t *testing.T) {
	t.Parallel()
	p, err := egress.NewPolicy(nil)
	require.NoError(t, err)
	ctx := context.Background()
	for _, h := range []string{"127.0.0.1", "localhost", "LocalHost.", "api.localhost", "169.254.169.254", "10.0.0.1", "::1", "[::1]", "::ffff:10.0.0.1"} {
		require.ErrorIs(t, p.CheckHost(ctx, h), egress.ErrUnreachable, h)
	}
	require.NoError(t, p.CheckHost(ctx, "203.0.114.1"))
	// A name that does not resolve now is checked when it is dialled.
	require.NoError(t, p.CheckHost(ctx, "no-such-host.invalid"))
	lo, err := egress.NewPolicy([]string{"127.0.0.0/8"})
	require.NoError(t, err)
	require.NoError(t, lo.CheckHost(ctx, "localhost"))
}
