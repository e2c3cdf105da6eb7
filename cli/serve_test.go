package cli

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
)

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestServe(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t)
	addr := freeAddr(t)
	cfg := writeConfig(t, "specs: [../specs]\ntokens:\n  - {name: ops, role: admin, token: serve-test-token}\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"wf", "--config", cfg, "--database-url", url, "--log-level", "warn", "serve", "--listen", addr}, &out, &errOut)
	}()

	base := "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "wf serve did not start: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
	res, err := http.Get(base + "/readyz")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	req, err := http.NewRequest("POST", base+"/catalogs", strings.NewReader(`{"catalog_id": "served"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer serve-test-token")
	req.Header.Set("Content-Type", "application/json")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode)

	// SIGTERM (the context ending) shuts the server down and exits 0.
	cancel()
	select {
	case code := <-done:
		require.Equal(t, ExitOK, code, errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatal("wf serve did not stop")
	}
}
