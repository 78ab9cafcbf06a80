package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
	"github.com/ignition-mcs/mcs/internal/authtokens"
	"github.com/ignition-mcs/mcs/internal/daemon"
	"github.com/ignition-mcs/mcs/internal/reload"
	"github.com/ignition-mcs/mcs/pki"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
	"github.com/ignition-mcs/mcs/source/kube"
	"github.com/ignition-mcs/mcs/source/tree"
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

// newGate is the skew gate: the --skew-policy file's policy, or none (a
// cluster's may come from the source). reload re-reads the file, keeping
// the policy in force when the new one does not parse.
func newGate(o *options, log *slog.Logger) (gate *skewgate.Gate, reload func(), err error) {
	if o.skewPolicy == "" {
		return skewgate.New(nil, log), func() {}, nil
	}
	gate, reload, err = skewgate.FromFile(o.skewPolicy, log)
	if err != nil {
		return nil, nil, fmt.Errorf("--skew-policy: %w", err)
	}
	return gate, reload, nil
}

// newTokens returns the bearer tokens of --auth-token-file, re-read when
// the file changes, and with --pool-token-secrets the pool token Secrets,
// followed as they change; nil when there are none.
func newTokens(ctx context.Context, o *options, log *slog.Logger) (func() []serve.Token, error) {
	file := func() []serve.Token { return nil }
	if o.authTokenFile != "" {
		var err error
		if file, err = authtokens.File(o.authTokenFile, nil, log); err != nil {
			return nil, fmt.Errorf("--auth-token-file: %w", err)
		}
	}
	if !o.poolTokenSecrets {
		if o.authTokenFile == "" {
			return nil, nil
		}
		return file, nil
	}
	rc, err := restConfig(o.kubeAPIConfig)
	if err != nil {
		return nil, fmt.Errorf("--pool-token-secrets: %w", err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("--pool-token-secrets: %w", err)
	}
	w, err := pki.WatchTokens(ctx, c, log)
	if err != nil {
		return nil, fmt.Errorf("--pool-token-secrets: %w", err)
	}
	return authtokens.Join(file, w), nil
}

// servingCert is the TLS listener's certificate, for /status; nil without
// one.
func servingCert(listenTLS, cert, key string) func() (*tls.Certificate, error) {
	if cert == "" || listenTLS == "" {
		return nil
	}
	return reload.LoadedPair(cert, key)
}

// nodeFiles reads the files served to nodes beside their config, at every
// render, so that a rotated file is served with the next one.
func nodeFiles(o *options) func() (render.NodeFiles, error) {
	return func() (render.NodeFiles, error) { return cmdline.NodeFiles(o.kubeconfig, o.kubeletCA) }
}

// isDir refuses, at start, a directory flag naming nothing or a file:
// serving would never become ready, and a mistyped path is the likely
// cause. A directory whose contents fail to render is served once fixed.
func isDir(flag, path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: no such directory", flag, path)
	case err != nil:
		return fmt.Errorf("%s: %w", flag, err)
	case !fi.IsDir():
		return fmt.Errorf("%s %s: not a directory", flag, path)
	}
	return nil
}

// newSource is the directory, or the API server: there the cluster's
// MachineConfiguration is the skew policy unless a policy file is given.
func newSource(o *options, ro render.Options, log *slog.Logger, reg prometheus.Registerer) (source.Source, error) {
	if o.bootstrap != nil {
		if err := isDir("--server-basedir", o.bootstrap.baseDir); err != nil {
			return nil, err
		}
		return &source.Bootstrap{Dir: o.bootstrap.baseDir, Options: ro, Poll: o.poll}, nil
	}
	if o.source != "kube" {
		if err := isDir("--dir", o.dir); err != nil {
			return nil, err
		}
		return &source.Dir{Path: o.dir, Poll: o.poll, Options: ro,
			Limits: tree.Limits{MaxFileSize: o.maxFileSize, MaxTreeSize: o.maxTreeSize, FileSetting: "--max-file-size", TreeSetting: "--max-tree-size"}}, nil
	}
	rc, err := restConfig(o.kubeAPIConfig)
	if err != nil {
		return nil, err
	}
	mode, err := kube.ParseMode(o.renderMode)
	if err != nil {
		return nil, err
	}
	if o.skewPolicy != "" {
		log.Info("skew policy from --skew-policy; the cluster's MachineConfiguration is not read")
	}
	return kube.New(kube.Config{
		REST:             rc,
		Mode:             mode,
		Options:          ro,
		ControllerConfig: o.controllerConfig,
		SkewPolicy:       o.skewPolicy == "",
		Logger:           log,
		Registerer:       reg,
		KubeconfigData:   o.start != nil,
		ImageMode:        o.start != nil,
		QPS:              float32(o.kubeQPS),
		Burst:            o.kubeBurst,
		BacklogList:      o.kubeBacklogList,
	})
}
