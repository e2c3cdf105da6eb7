package client

import (
	"sync/atomic"

	"github.com/wfhq/wf/engine/spec"
)

// specsRef holds the spec set a client and its copies validate against.
type specsRef struct{ atomic.Pointer[spec.Set] }

// SetSpecs makes the client, and every copy WithFiles and
// WithTracerProvider made of it, validate requests against specs from now
// on (the specs were reloaded). An enqueue under way finishes with the set
// it started with.
func (c *Client) SetSpecs(specs *spec.Set) { c.specs.Store(specs) }
