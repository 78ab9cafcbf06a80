// Package daemon starts a long-running mcs command the same way each time: its logger, the klog bridge, a metrics registry, its API clients, Events and a status listener, all undone when the command ends.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/ignition-mcs/mcs/internal/klogbridge"
	"github.com/ignition-mcs/mcs/internal/logthrottle"
)

// NewLogger is a logger writing format ("text" or "json") to w at level,
// lines an outsider can repeat at will throttled (see logthrottle), every
// value bounded (BoundAttr).
func NewLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	ho := &slog.HandlerOptions{Level: level, ReplaceAttr: BoundAttr}
	switch format {
	case "text":
		return slog.New(logthrottle.New(slog.NewTextHandler(w, ho), nil)), nil
	case "json":
		return slog.New(logthrottle.New(slog.NewJSONHandler(w, ho), nil)), nil
	}
	return nil, fmt.Errorf("%q is not text or json", format)
}

// logValueMax bounds any one value of a log line: a render error listing
// many problems fits, while a value a client or an object chose (a 7 MiB
// apiVersion, a 3 MiB name) cannot make a line megabytes long.
const logValueMax = 4 << 10

// BoundAttr is a slog ReplaceAttr that cuts a string, error or other
// value (the message too) longer than logValueMax to its first
// logValueMax bytes, at a character boundary, followed by "…(N bytes)".
func BoundAttr(_ []string, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	var s string
	switch v.Kind() {
	case slog.KindString:
		s = v.String()
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		default:
			return a
		}
	default:
		return a
	}
	if len(s) <= logValueMax {
		return a
	}
	cut := logValueMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return slog.String(a.Key, s[:cut]+"…("+strconv.Itoa(len(s))+" bytes)")
}

// newRegistry is a private metrics registry with the Go runtime's and the
// process's collectors, which every command's /metrics shows.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Config is how a command starts.
type Config struct {
	Log *slog.Logger
}

// Command is a started command. Close undoes what Start did.
type Command struct {
	Log      *slog.Logger
	Registry *prometheus.Registry
	API      *Clients // nil until Connect
	undo     []func()
}

// Start routes klog's lines (and controller-runtime's) through cfg.Log
// until Close, and makes the registry.
func Start(ctx context.Context, cfg Config) (*Command, error) {
	c := &Command{Log: cfg.Log, Registry: newRegistry()}
	c.undo = append(c.undo, klogbridge.To(ctx, cfg.Log))
	return c, nil
}

// Connect makes the command's API clients (API) from rc: those Recorder
// sends through.
func (c *Command) Connect(rc *rest.Config) error {
	if rc == nil {
		return errors.New("connecting to the API server: no client configuration")
	}
	api, err := NewClients(rc)
	if err != nil {
		return fmt.Errorf("connecting to the API server%s: %w", apiHost(rc.Host, err), err)
	}
	c.API = api
	return nil
}

// apiHost is host as Connect's error names it: never its userinfo (a
// password may be there), and not at all where the cause names it already
// (client-go's errors about the host quote it).
func apiHost(host string, cause error) string {
	if strings.Contains(cause.Error(), host) {
		return ""
	}
	if u, err := url.Parse(host); err == nil && u.Host != "" {
		return " " + u.Host
	}
	return " " + host[strings.LastIndex(host, "@")+1:]
}

// Close undoes Start, and stops what the command started since, latest
// first.
func (c *Command) Close() {
	for i := len(c.undo) - 1; i >= 0; i-- {
		c.undo[i]()
	}
	c.undo = nil
}

// Recorder is an Event recorder for component, sending through the API
// clients until Close. In a pod the host name is the pod's: each
// replica's Events say which one saw what. It needs the clients: called
// before Connect succeeded it panics saying so, a mistake in the command's
// wiring, not something to run with (its Events would be lost unseen).
func (c *Command) Recorder(component string) record.EventRecorder {
	if c.API == nil {
		panic("daemon: Recorder(" + component + ") before Connect: no API clients to send Events through")
	}
	events := record.NewBroadcaster()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.API.Kube.CoreV1().Events("")})
	c.undo = append(c.undo, events.Shutdown)
	host, _ := os.Hostname()
	return events.NewRecorder(runtime.NewScheme(), corev1.EventSource{Component: component, Host: host})
}

// shutdownGrace is how long a status listener's requests under way get
// to finish when the command ends.
const shutdownGrace = 5 * time.Second

// Serve serves h (status, metrics, probes) over plain HTTP on ln until
// Close, which lets requests under way finish for shutdownGrace.
func (c *Command) Serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	c.undo = append(c.undo, func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
}
