package http

import "net/http"

// postJSON answers JSON POSTs: up2k handshakes and searches.
func (s *Server) postJSON(q *req) error {
	return errorf(http.StatusNotImplemented, "up2k uploads and search are not available in this version of hoard yet")
}

// postChunk answers up2k chunk uploads.
func (s *Server) postChunk(q *req) error {
	return errorf(http.StatusNotImplemented, "up2k uploads are not available in this version of hoard yet")
}
