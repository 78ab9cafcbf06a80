package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

func TestNewLogger(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		level        slog.Level
		want, not    string
	}{
		{"text", "text", slog.LevelInfo, "level=INFO msg=shown", "hidden"},
		{"json", "json", slog.LevelInfo, `"msg":"shown"`, "hidden"},
		{"debug", "text", slog.LevelDebug, "msg=hidden", "nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			log, err := NewLogger(&b, tc.format, tc.level)
			if err != nil {
				t.Fatal(err)
			}
			log.Debug("hidden")
			log.Info("shown")
			if !strings.Contains(b.String(), tc.want) || strings.Contains(b.String(), tc.not) {
				t.Errorf("logged %q, want %q and not %q", b.String(), tc.want, tc.not)
			}
		})
	}
	if _, err := NewLogger(io.Discard, "xml", 0); err == nil || err.Error() != `"xml" is not text or json` {
		t.Errorf("format xml: %v", err)
	}
}

// Every value of a line, the message and errors too, is cut to
// logValueMax with its length: a 7 MiB value makes a line of some KiB.
func TestNewLoggerBoundsValues(t *testing.T) {
	big := strings.Repeat("é", 3<<20) // 6 MiB
	for _, format := range []string{"text", "json"} {
		var b bytes.Buffer
		log, err := NewLogger(&b, format, slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		log.With("with", big).Info(big, "name", big, "err", errors.New(big), "n", 7, "short", "kept")
		if b.Len() > 5*logValueMax || strings.Count(b.String(), "…(6291456 bytes)") != 4 || !strings.Contains(b.String(), "kept") {
			t.Errorf("%s: a line of %d bytes: %.300q", format, b.Len(), b.String())
		}
	}
}

func TestNewRegistryGathersRuntime(t *testing.T) {
	mfs, err := newRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"go_goroutines", "process_open_fds"} {
		if !names[want] {
			t.Errorf("no %s among %d families", want, len(names))
		}
	}
}

func TestStartThenConnect(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	c, err := Start(context.Background(), Config{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.API != nil || c.Registry == nil || c.Log != log {
		t.Errorf("before Connect: %+v", c)
	}
	if err := c.Connect(&rest.Config{Host: "https://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if c.API == nil || c.API.Kube == nil || c.API.Dynamic == nil || c.API.Metadata == nil || c.API.REST.Host != "https://127.0.0.1:1" {
		t.Errorf("after Connect: clients %+v", c.API)
	}
	for _, tc := range []struct {
		name, host, caFile, want string
	}{
		{"no URL, named once by the cause", "127.0.0.1:1/%zz", "", `connecting to the API server: parse "http://127.0.0.1:1/%zz": invalid URL escape`},
		{"userinfo left out", "https://admin:s3cret@127.0.0.1:1", "/nonexistent/ca.crt", "connecting to the API server 127.0.0.1:1: "},
		{"host:port with userinfo", "admin:s3cret@127.0.0.1:1", "/nonexistent/ca.crt", "connecting to the API server 127.0.0.1:1: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Connect(&rest.Config{Host: tc.host, TLSClientConfig: rest.TLSClientConfig{CAFile: tc.caFile}})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") || errors.Unwrap(err) == nil {
				t.Errorf("got %v, want it to start %q, wrap the cause and keep the password out", err, tc.want)
			}
		})
	}
	if err := c.Connect(nil); err == nil {
		t.Error("Connect(nil): no error")
	}
}

// Recorder before Connect is a wiring mistake, said at once.
func TestRecorderBeforeConnect(t *testing.T) {
	c := &Command{Log: slog.New(slog.DiscardHandler)}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "before Connect") {
			t.Errorf("recovered %v, want a panic saying Recorder came before Connect", r)
		}
	}()
	c.Recorder("mcs-test")
}

// Serve answers until Close, and not after: the listener is the
// command's, closed with it.
func TestServeUntilClose(t *testing.T) {
	c, err := Start(context.Background(), Config{Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	url := "http://" + ln.Addr().String() + "/healthz"
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Errorf("body %q", body)
	}
	c.Close()
	if _, err := client.Get(url); err == nil {
		t.Error("served after Close")
	}
}

// Recorder's Events reach the API server, named by component and host.
func TestRecorder(t *testing.T) {
	kc := fake.NewClientset()
	c := &Command{Log: slog.New(slog.DiscardHandler), API: &Clients{Kube: kc}}
	defer c.Close()
	w, err := kc.CoreV1().Events("ns").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// An object whose kind is set: the recorder's scheme is empty.
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	c.Recorder("mcs-test").Event(pod, corev1.EventTypeNormal, "Seen", "a test event")
	select {
	case ev := <-w.ResultChan():
		if e, ok := ev.Object.(*corev1.Event); !ok || e.Reason != "Seen" || e.Source.Component != "mcs-test" || e.InvolvedObject.Name != "p" {
			t.Errorf("event %+v", ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event recorded in 10 s")
	}
}
