package klogbridge

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
)

// Lines go to the fallback until a command's logger is set, then to it,
// with the attributes and groups klog's logger was derived with; restoring
// sends them back. A context without a bridge changes nothing.
func TestBridge(t *testing.T) {
	var fallback, command bytes.Buffer
	b := &bridge{target: new(atomic.Pointer[slog.Handler]), fallback: slog.NewTextHandler(&fallback, nil)}
	ctx := context.WithValue(context.Background(), ctxKey{}, b)
	log := slog.New(b).With("component", "leaderelection")
	log.Info("before")
	restore := To(ctx, slog.New(slog.NewJSONHandler(&command, nil)))
	log.Info("during")
	restore()
	log.Info("after")
	if f := fallback.String(); !strings.Contains(f, "msg=before component=leaderelection") || !strings.Contains(f, "msg=after") || strings.Contains(f, "during") {
		t.Errorf("fallback got:\n%s", f)
	}
	if c := command.String(); !strings.Contains(c, `"msg":"during","component":"leaderelection"`) || strings.Contains(c, "before") {
		t.Errorf("the command's logger got:\n%s", c)
	}
	To(context.Background(), slog.New(slog.DiscardHandler))() // no bridge: a no-op
}
