package web

// Patterns returns the patterns of the routes s registered ("GET
// /api/v1/queues/{q}"), for the test that compares them with the OpenAPI
// document.
func Patterns(s *Server) []string { return append([]string(nil), s.patterns...) }
