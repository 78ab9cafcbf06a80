package serving

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/ignition-mcs/mcs/internal/authtokens"
	"github.com/ignition-mcs/mcs/internal/reload"
	"github.com/ignition-mcs/mcs/pki"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source"
	"github.com/ignition-mcs/mcs/source/kube"
	"github.com/ignition-mcs/mcs/source/tree"
)

// newGate is the skew gate: the --skew-policy file's policy, or none (a
// cluster's may come from the source). reload re-reads the file, keeping
// the policy in force when the new one does not parse.
func (c *Config) newGate(log *slog.Logger) (gate *skewgate.Gate, reload func(), err error) {
	if c.SkewPolicy == "" {
		return skewgate.New(nil, log), func() {}, nil
	}
	gate, reload, err = skewgate.FromFile(c.SkewPolicy, log)
	if err != nil {
		return nil, nil, fmt.Errorf("--skew-policy: %w", err)
	}
	return gate, reload, nil
}

// newTokens returns the bearer tokens of --auth-token-file, re-read when
// the file changes, and with --pool-token-secrets the pool token Secrets,
// followed as they change; nil when there are none.
func (c *Config) newTokens(ctx context.Context, log *slog.Logger) (func() []serve.Token, error) {
	file := func() []serve.Token { return nil }
	if c.AuthTokenFile != "" {
		var err error
		if file, err = authtokens.File(c.AuthTokenFile, nil, log); err != nil {
			return nil, fmt.Errorf("--auth-token-file: %w", err)
		}
	}
	if !c.PoolTokenSecrets {
		if c.AuthTokenFile == "" {
			return nil, nil
		}
		return file, nil
	}
	rc, err := c.REST()
	if err != nil {
		return nil, fmt.Errorf("--pool-token-secrets: %w", err)
	}
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("--pool-token-secrets: %w", err)
	}
	w, err := pki.WatchTokens(ctx, kc, log)
	if err != nil {
		return nil, fmt.Errorf("--pool-token-secrets: %w", err)
	}
	return authtokens.Join(file, w), nil
}

// servingCert is the TLS listener's certificate, for /status; nil without
// one.
func (c *Config) servingCert() func() (*tls.Certificate, error) {
	if c.Cert == "" || c.ListenTLS == "" {
		return nil
	}
	return reload.LoadedPair(c.Cert, c.Key)
}

// isDir refuses, at start, a directory setting naming nothing or a file:
// serving would never become ready, and a mistyped path is the likely
// cause. A directory whose contents fail to render is served once fixed.
func isDir(setting, path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: no such directory", setting, path)
	case err != nil:
		return fmt.Errorf("%s: %w", setting, err)
	case !fi.IsDir():
		return fmt.Errorf("%s %s: not a directory", setting, path)
	}
	return nil
}

// newSource is the directory, or the API server: there the cluster's
// MachineConfiguration is the skew policy unless a policy file is given.
func (c *Config) newSource(ro render.Options, log *slog.Logger, reg prometheus.Registerer) (source.Source, error) {
	if c.Bootstrap != nil {
		if err := isDir("--server-basedir", c.Bootstrap.BaseDir); err != nil {
			return nil, err
		}
		return &source.Bootstrap{Dir: c.Bootstrap.BaseDir, Options: ro, Poll: c.Poll}, nil
	}
	if c.Source != "kube" {
		if err := isDir("--dir", c.Dir); err != nil {
			return nil, err
		}
		return &source.Dir{Path: c.Dir, Poll: c.Poll, Options: ro,
			Limits: tree.Limits{MaxFileSize: c.MaxFileSize, MaxTreeSize: c.MaxTreeSize, FileSetting: "--max-file-size", TreeSetting: "--max-tree-size"}}, nil
	}
	rc, err := c.REST()
	if err != nil {
		return nil, err
	}
	mode, err := kube.ParseMode(c.RenderMode)
	if err != nil {
		return nil, err
	}
	if c.SkewPolicy != "" {
		log.Info("skew policy from --skew-policy; the cluster's MachineConfiguration is not read")
	}
	return kube.New(kube.Config{
		REST:             rc,
		Mode:             mode,
		Options:          ro,
		ControllerConfig: c.ControllerConfig,
		SkewPolicy:       c.SkewPolicy == "",
		Logger:           log,
		Registerer:       reg,
		KubeconfigData:   c.Start != nil,
		ImageMode:        c.Start != nil,
		QPS:              float32(c.KubeQPS),
		Burst:            c.KubeBurst,
		BacklogList:      c.KubeBacklogList,
	})
}

// startSource is, for mcs start, src also signalling when the token files
// change, so a rotated token reaches the next node without a restart.
// Without start it is src unchanged.
func (c *Config) startSource(src source.Source, log *slog.Logger) source.Source {
	if c.Start == nil {
		return src
	}
	log.Info("mcs start", "apiserverURL", c.Start.APIServerURL, "payloadVersion", c.Start.PayloadVersion, "tokenDir", c.Start.TokenDir)
	return source.WithFiles(src, kube.TokenFiles(c.Start.TokenDir), c.Poll)
}

// nodeFiles reads, at every render, the node files of mcs start: the
// kubeconfig with the CA the cluster's kubeconfig-data holds now.
func (st *Start) nodeFiles(src *kube.Source) func() (render.NodeFiles, error) {
	return func() (render.NodeFiles, error) {
		kc, err := kube.NodeKubeconfig(st.TokenDir, st.APIServerURL, src.KubeconfigCA())
		return render.NodeFiles{Kubeconfig: kc}, err
	}
}
