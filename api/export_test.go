package api

// Routes lists the server's operations as "METHOD /pattern", for the
// contract test.
func Routes(s *Server) []string {
	var out []string
	for _, rt := range s.routeTable() {
		out = append(out, rt.method+" "+rt.pattern)
	}
	return out
}
