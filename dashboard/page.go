package dashboard

import (
	_ "embed"
	"net/http"
)

// page is the whole user interface: one HTML file with its CSS and vanilla
// JavaScript inline, embedded in the binary. Browsers on these machines
// have no internet, so nothing may come from a CDN.
//
//go:embed page.html
var page []byte

func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(page)
}
