// Command baseline serves fixed bytes with nothing else: the ceiling mcs's load test is measured against.
//
// Each file NAME in --dir is served, whole, in one Write, at /config/NAME
// (any other path gets --dir's first file), with the headers mcs sent for
// it when NAME.headers (curl -D) is beside it, so the bytes on the wire are
// mcs's.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

type body struct {
	header http.Header
	bytes  []byte
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	dir := flag.String("dir", "", "directory of bodies, one file per pool")
	flag.Parse()
	bodies, first, err := load(*dir)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening on", ln.Addr())
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := bodies[strings.TrimPrefix(r.URL.Path, "/config/")]
		if b == nil {
			b = first
		}
		h := w.Header()
		for k, v := range b.header {
			h[k] = v
		}
		w.Write(b.bytes)
	})))
}

func load(dir string) (map[string]*body, *body, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]*body{}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasSuffix(name, ".headers") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, nil, err
		}
		h := http.Header{}
		if raw, err := os.ReadFile(filepath.Join(dir, name+".headers")); err == nil {
			tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw)))
			if _, err := tp.ReadLine(); err != nil { // the status line
				return nil, nil, fmt.Errorf("%s.headers: %w", name, err)
			}
			mh, err := tp.ReadMIMEHeader()
			if err != nil {
				return nil, nil, fmt.Errorf("%s.headers: %w", name, err)
			}
			h = http.Header(mh)
			h.Del("Date")
		}
		h["Content-Length"] = []string{strconv.Itoa(len(b))}
		out[name] = &body{header: h, bytes: b}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("%s: no bodies", dir)
	}
	slices.Sort(names)
	return out, out[names[0]], nil
}
