// Command baseline serves fixed bytes with nothing else: the ceiling mcs's load test is measured against.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	body := flag.String("body", "", "file whose bytes every request gets")
	ctype := flag.String("content-type", "application/vnd.coreos.ignition+json;version=3.6.0", "Content-Type")
	flag.Parse()
	b, err := os.ReadFile(*body)
	if err != nil {
		log.Fatal(err)
	}
	length := strconv.Itoa(len(b))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening on", ln.Addr())
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{*ctype}
		w.Header()["Content-Length"] = []string{length}
		w.Write(b)
	})))
}
