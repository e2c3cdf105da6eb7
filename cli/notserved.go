package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/wfhq/wf/engine/store"
)

// warnUnserved writes a warning line to w for each of types that no live
// wf run instance serves while some run (store.UnservedWhileRunning): their
// tasks wait PENDING, waiting_reason not_served, until one that does runs.
// A failed check is not worth failing the command for: it says nothing.
func warnUnserved(ctx context.Context, st *store.Store, w io.Writer, types ...string) {
	unserved, err := st.UnservedWhileRunning(ctx, types)
	if err != nil {
		return
	}
	for _, tt := range unserved {
		fmt.Fprintf(w, "wf: warning: no running wf instance serves task type %s: the task waits (waiting_reason not_served) "+
			"until an instance whose specs have it starts, or the running ones reload their specs (wf reload)\n", tt)
	}
}
