package wfclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/wfclient"
)

// TestNoAnswerWrapsTheCause: a request that gets no answer before its
// context ends fails with an error that errors.Is finds the context's
// error in (a caller's deadline handling must not depend on where the
// deadline struck: while waiting between polls or inside a request).
func TestNoAnswerWrapsTheCause(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	c, err := wfclient.New(wfclient.Config{BaseURL: srv.URL, Token: "t"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Get(ctx, "01a23201-f945-72e5-be49-339a1b15d641")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, wfclient.IsNotFound(err))
	require.Contains(t, err.Error(), "GET /tasks/01a23201-f945-72e5-be49-339a1b15d641")
}
