package serve

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/ignition-mcs/mcs/internal/text"
	"github.com/ignition-mcs/mcs/serve/status"
)

// statusHandler answers /status: the page for browsers, JSON otherwise.
func statusHandler(rec *status.Recorder, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if f := r.URL.Query().Get("format"); f != "" && f != "html" && f != "json" {
			plain(w, http.StatusBadRequest, fmt.Sprintf("?format=%s: /status is served as html or json (?format=html, ?format=json, or by Accept)", text.Bounded(f)))
			return
		}
		if wantsHTML(r) {
			if err := status.WritePage(w, rec.Status()); err != nil {
				log.Error("rendering the status page", "err", err)
				plain(w, http.StatusInternalServerError, "cannot render the status page: "+err.Error())
			}
			return
		}
		w.Header().Set("Vary", "Accept")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(rec.Status())
	}
}

// wantsHTML reports whether /status should answer with the page: when
// ?format=html, or when the Accept header ranks HTML above JSON (browsers).
// Everything else, curl and scripts included, gets JSON.
func wantsHTML(r *http.Request) bool {
	switch r.URL.Query().Get("format") {
	case "html":
		return true
	case "json":
		return false
	}
	for _, mr := range parseAccept(r.Header.Get("Accept")) {
		if mr.q <= 0 {
			continue
		}
		switch mr.typ + "/" + mr.subtype {
		case "text/html", "application/xhtml+xml", "text/*":
			return true
		case "application/json", "application/*", "*/*":
			return false
		}
	}
	return false
}
