package api

import "cmp"

// Routes lists the server's operations as "METHOD /pattern", for the
// contract test.
func Routes(s *Server) []string {
	var out []string
	for _, rt := range s.routeTable() {
		out = append(out, rt.method+" "+cmp.Or(documentedPaths[rt.pattern], rt.pattern))
	}
	return out
}
