package main

import (
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
)

// response is what mcs answered one era's request: the bare server writes
// it, and the nodes check every answer against it.
type response struct {
	Path   string      `json:"path"`
	Accept string      `json:"accept"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
	Status string      `json:"-"` // as recorded
}

// bareHandler writes, in one Write, the recorded response of the request's
// path and Accept, to requests carrying the token: the least a server
// can do for a node, which mcs is measured against.
func bareHandler(responses []response, token string) http.Handler {
	type key struct{ path, accept string }
	byKey := map[key]*response{}
	for i := range responses {
		r := &responses[i]
		r.Header.Set("Content-Length", strconv.Itoa(len(r.Body)))
		byKey[key{r.Path, r.Accept}] = r
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if subtle.ConstantTimeCompare([]byte(req.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r := byKey[key{req.URL.Path, req.Header.Get("Accept")}]
		if r == nil {
			http.NotFound(w, req)
			return
		}
		h := w.Header()
		for k, v := range r.Header {
			h[k] = v
		}
		_, _ = w.Write(r.Body)
	})
}

// serveBare is `storm bare`: the bare server in a process of its own, so
// that its RSS and CPU are its own. It prints its address and serves until
// killed.
func serveBare(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("storm bare", flag.ContinueOnError)
	responses := fs.String("responses", "", "JSON file of the responses to write")
	cert := fs.String("cert", "", "TLS certificate")
	key := fs.String("key", "", "TLS key")
	tokenFile := fs.String("token", "", "file holding the token requests must carry")
	listen := fs.String("listen", "127.0.0.1:0", "listen address (loopback)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var rs []response
	b, err := os.ReadFile(*responses)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &rs); err != nil {
		return fmt.Errorf("%s: %w", *responses, err)
	}
	tok, err := os.ReadFile(*tokenFile)
	if err != nil {
		return err
	}
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		return err
	}
	ln, err := listenBare(*listen, pair)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "listening on https://%s\n", ln.Addr())
	token, _, _ := cutField(string(tok))
	return http.Serve(ln, bareHandler(rs, token))
}

func listenBare(addr string, pair tls.Certificate) (net.Listener, error) {
	if host, _, err := net.SplitHostPort(addr); err != nil || !net.ParseIP(host).IsLoopback() {
		return nil, errors.New("the bare server listens on loopback only")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"http/1.1"}}), nil
}

// cutField is the first blank-separated field of s and the rest.
func cutField(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\n' || s[i] == '\t' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
