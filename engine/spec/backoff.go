package spec

import "github.com/wfhq/wf/wftype"

// Backoff is a task type's retry delay policy (see wftype.Backoff, where the
// policy lives so that the runtime applies the same one without the specs).
type Backoff = wftype.Backoff

// defaultBackoff is the seed's policy: 2^retry_count seconds, capped at an
// hour, with 10% jitter.
func defaultBackoff() Backoff { return wftype.DefaultBackoff }
