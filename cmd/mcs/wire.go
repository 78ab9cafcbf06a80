package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
	"github.com/ignition-mcs/mcs/internal/daemon"
	"github.com/ignition-mcs/mcs/render"
)

// logger is the logger --log-format and --log-level ask for (see
// daemon.NewLogger).
func (l logOptions) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	log, err := daemon.NewLogger(w, l.format, level)
	if err != nil {
		return nil, fmt.Errorf("--log-format: %w", err)
	}
	return log, nil
}

// nodeFiles reads the files served to nodes beside their config, at every
// render, so that a rotated file is served with the next one.
func nodeFiles(o *options) func() (render.NodeFiles, error) {
	return func() (render.NodeFiles, error) { return cmdline.NodeFiles(o.kubeconfig, o.kubeletCA) }
}
