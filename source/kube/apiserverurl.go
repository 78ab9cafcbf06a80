package kube

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
)

// placeholder matches what a template leaves for a person to fill in: an
// upper-case word (CLUSTER.DOMAIN), <cluster>, {{.Host}}, ${HOST}.
var placeholder = regexp.MustCompile(`(^|[.-])[A-Z][A-Z_]+([.-]|$)|[<>{}$]`)

// Why CheckAPIServerURL refuses a URL.
var (
	errNotHTTPS    = errors.New("want https://HOST:PORT, the URL nodes reach the API server at (OpenShift's: https://api-int.<cluster domain>:6443)")
	ErrPlaceholder = errors.New("the host is a placeholder")
)

// CheckAPIServerURL refuses a URL nodes could not use in the kubeconfig
// NodeKubeconfig builds: every node that joins would fail to reach the API
// server, long after the server started.
func CheckAPIServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "https" || u.Hostname() == "" {
		return errNotHTTPS
	}
	if placeholder.MatchString(u.Host) {
		return ErrPlaceholder
	}
	return nil
}

// TokenFiles are the node-bootstrapper token's files in a token directory.
func TokenFiles(dir string) []string {
	return []string{filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")}
}

// CheckTokenDir refuses a token directory without the token's files,
// naming the first one missing once (not its whole path again).
func CheckTokenDir(dir string) error {
	for _, f := range TokenFiles(dir) {
		if _, err := os.Stat(f); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return fmt.Errorf("%s: %w", filepath.Base(pe.Path), pe.Err)
			}
			return err
		}
	}
	return nil
}
