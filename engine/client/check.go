package client

// Check validates a request exactly as Enqueue would (task type, schema name,
// inputs against the schema, dedup key) without writing anything. Callers
// that enqueue a batch on behalf of many sources (the event consumer) check
// each request first, so that one bad request fails only its own source
// instead of the whole batch.
func (c *Client) Check(req Request) error {
	_, err := c.prepare(req, nil)
	return err
}
