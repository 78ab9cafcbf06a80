package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// fileCache re-reads a file when its size or modification time changes,
// keeping the last good value when the new contents do not parse.
type fileCache struct {
	path  string
	parse func([]byte) (any, error)

	mu      sync.Mutex
	checked time.Time
	stamp   string
	val     any
}

// minRecheck bounds how often a hot path stats the file.
const minRecheck = time.Second

func (c *fileCache) get() (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.val != nil && time.Since(c.checked) < minRecheck {
		return c.val, nil
	}
	c.checked = time.Now()
	info, err := os.Stat(c.path)
	if err != nil {
		return c.val, err
	}
	stamp := fmt.Sprint(info.Size(), info.ModTime().UnixNano())
	if stamp == c.stamp && c.val != nil {
		return c.val, nil
	}
	b, err := os.ReadFile(c.path)
	if err != nil {
		return c.val, err
	}
	v, err := c.parse(b)
	if err != nil {
		return c.val, fmt.Errorf("%s: %w", c.path, err)
	}
	c.stamp, c.val = stamp, v
	return v, nil
}

// certReloader serves the newest valid certificate pair: rotating the files
// on disk takes effect on the next handshake, without a restart.
type certReloader struct {
	cert, key string
	once      sync.Once
	cache     *fileCache
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.once.Do(func() {
		r.cache = &fileCache{path: r.cert, parse: func([]byte) (any, error) {
			c, err := tls.LoadX509KeyPair(r.cert, r.key)
			if err != nil {
				return nil, err
			}
			return &c, nil
		}}
	})
	v, err := r.cache.get()
	if v == nil {
		return nil, fmt.Errorf("loading TLS certificate: %w", err)
	}
	return v.(*tls.Certificate), nil
}
