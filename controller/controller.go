// Package controller renders every MachineConfigPool with mcs's renderer and writes the result to the cluster as OpenShift's render controller does: leader-elected, content-addressed, at the lowest spec, keeping what is in use.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/rand"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// Config configures a Controller.
type Config struct {
	// REST reaches the API server (see kube.RESTConfig).
	REST *rest.Config
	// Options bound the rendered spec; the servers in self mode must use
	// the same, so that they name the configs this writes.
	Options render.Options
	// ControllerConfig names the ControllerConfig to render with (default
	// kube.DefaultControllerConfig).
	ControllerConfig string

	// Identity names this replica in the Lease (default: host name and a
	// random suffix, so two processes on one host differ).
	Identity string
	// The Lease that elects the one writer (default mcs/mcs-controller).
	LeaseNamespace, LeaseName string
	// Leader election timing (defaults 15s, 10s, 2s, client-go's usual).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ReleaseOnCancel gives the Lease up when ctx ends, so a standby takes
	// over at once rather than after LeaseDuration (a clean shutdown).
	ReleaseOnCancel bool

	// DryRun writes nothing: every write is sent with dryRun=All, so the
	// API server validates and authorises it, and is reported instead. A
	// dry run takes no part in leader election (the Lease would be a
	// write): it renders and reports as if it led, beside the elected
	// writer, and needs no namespace.
	DryRun bool
	// Prune deletes rendered configs no pool or node uses beyond the Keep
	// newest per pool; off by default.
	Prune bool
	Keep  int
	// Resync re-renders this often even without a change (default 10m):
	// it notices a pool edited by someone else.
	Resync time.Duration
	// Debounce is the quiet time after a change before writing (default
	// 20ms): the render starts at once, and its writes are dropped if
	// another change comes within it, so a burst writes its end state.
	Debounce time.Duration
	// Workers bounds the pools written at once (default 16).
	Workers int
	// PruneGrace: a rendered config a pool named less than this ago is
	// never pruned (default 10m), so a node controller acting on a pool it
	// read before the pool moved on cannot point a node at a deleted config.
	PruneGrace time.Duration
	// NoEvents records no Events (RenderedConfigGenerated,
	// OSImageURLOverridden, SelectingAll) on the pools; a dry run records
	// none either.
	NoEvents bool

	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// DefaultKeep is how many rendered configs per pool beyond those in use
// pruning keeps: generous, since a rollback wants the previous ones.
const DefaultKeep = 10

// Controller keeps every pool pointing at the rendered MachineConfig of its
// MachineConfigs, when it holds the Lease. Its jobs are its parts: the
// guards' caches, the writer of pools and rendered configs, the status book
// /status reads, the Events.
type Controller struct {
	cfg    Config
	log    *slog.Logger
	src    *kube.Source
	lease  coordinationv1.CoordinationV1Interface
	m      *metrics
	guards *guardCaches
	w      *writer
	book   *statusBook
	events *eventLog
	// notifier writes the Events; nil with NoEvents.
	notifier *kube.EventNotifier
	pruner   *pruner
	plans    plans
	gate     *gate
	// afterSync, when set (by tests), is told the outcome of each pool's
	// sync: a test waits for a sync instead of for time to pass.
	afterSync func(pool string, err error)
}

// New checks cfg and prepares the clients; nothing reaches the network
// until Run.
func New(cfg Config) (*Controller, error) {
	if cfg.REST == nil {
		return nil, errors.New("controller: no REST config")
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(cfg.REST)
	if rc.UserAgent == "" {
		rc.UserAgent = "mcs-controller/" + cfg.Identity
	}
	c := &Controller{cfg: cfg, log: cfg.Logger.With("identity", cfg.Identity)}
	var err error
	if c.m, err = newMetrics(cfg.Registerer); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	// The source renders exactly as the servers in self mode do; its
	// metrics are the servers' and are not registered twice here.
	if c.src, err = kube.New(kube.Config{REST: rc, Mode: kube.ModeSelf, Options: cfg.Options,
		ControllerConfig: cfg.ControllerConfig, Logger: cfg.Logger, Rendered: c.rendered}); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	if c.guards, err = newGuardCaches(rc, cfg.ControllerConfig, c.log); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	if !cfg.DryRun {
		if c.lease, err = leaseClient(rc); err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
	}
	dyn, meta, err := kube.DynamicClients(rc)
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c.gate = &gate{src: c.src, caches: c.guards, log: c.log}
	c.book = newStatusBook(cfg, c.m, c.log)
	c.events = &eventLog{m: c.m}
	if !cfg.NoEvents && !cfg.DryRun {
		// The servers' recorder: per pool and reason a burst, then rate
		// limited, and repeats counted on one Event.
		if c.notifier, err = c.src.Events(kube.EventsConfig{Host: cfg.Identity, Component: eventComponent}); err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
		c.events.record = c.notifier.Record
	}
	raw, err := rawClient(rc)
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c.w = &writer{dyn: dyn, raw: raw, meta: meta, pointed: c.gate.reconc.rendered, src: c.src, m: c.m, book: c.book, log: c.log, dryRun: cfg.DryRun, events: c.events, baseImage: c.guards.baseImage}
	c.gate.reconc.fetch = c.w.fetch
	c.pruner = &pruner{dyn: dyn, meta: meta, m: c.m, book: c.book, log: c.log, keep: cfg.Keep, dryRun: cfg.DryRun,
		grace: cfg.PruneGrace, started: time.Now(), named: c.w.left.at}
	return c, nil
}

func (cfg *Config) defaults() error {
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = host + "_" + rand.String(6)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.LeaseDuration, 15*time.Second)
	def(&cfg.RenewDeadline, 10*time.Second)
	def(&cfg.RetryPeriod, 2*time.Second)
	def(&cfg.Resync, 10*time.Minute)
	def(&cfg.Debounce, 20*time.Millisecond)
	def(&cfg.PruneGrace, 10*time.Minute)
	if cfg.Workers <= 0 {
		cfg.Workers = 16
	}
	if cfg.RenewDeadline >= cfg.LeaseDuration {
		return fmt.Errorf("controller: the renew deadline %s must be below the lease duration %s", cfg.RenewDeadline, cfg.LeaseDuration)
	}
	if cfg.LeaseNamespace == "" {
		cfg.LeaseNamespace = "mcs"
	}
	if cfg.LeaseName == "" {
		cfg.LeaseName = "mcs-controller"
	}
	if cfg.ControllerConfig == "" {
		cfg.ControllerConfig = kube.DefaultControllerConfig
	}
	if cfg.Keep < 0 {
		return fmt.Errorf("controller: keep %d is negative", cfg.Keep)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Run starts the caches (every replica keeps them warm, so a standby takes
// over without a cold start) and campaigns for the Lease until ctx ends;
// while it holds the Lease it renders and writes. A dry run leads from the
// start, without a Lease.
func (c *Controller) Run(ctx context.Context) error {
	c.src.Start(ctx)
	go c.guards.run(ctx)
	if c.notifier != nil {
		defer c.notifier.Shutdown()
	}
	if c.cfg.DryRun {
		c.lead(ctx)
		c.setLeading(false)
		return nil
	}
	for ctx.Err() == nil {
		if err := c.campaign(ctx); err != nil {
			return err
		}
	}
	return nil
}
