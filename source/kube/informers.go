package kube

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

func (s *Source) run(ctx context.Context) {
	served, err := s.discover(ctx)
	if err != nil {
		return // ctx ended
	}
	var wg sync.WaitGroup
	// Informers are started only once the ones needed are known, and all
	// stopped together when ctx ends.
	defer wg.Wait()
	add := func(gvr schema.GroupVersionResource, fieldSelector string, key func(*unstructured.Unstructured) string,
		onWatchErr func(error)) (cache.Store, cache.InformerSynced) {
		inf := NewInformer(resource(s.client, gvr), gvr, fieldSelector)
		// Field managers' bookkeeping is large and never read.
		transform := stripManagedFields
		if gvr == MachineConfigs && s.cfg.Mode == ModeSelf {
			transform = stripRenderedSpec
			self := &selfMachineConfigs{full: s.client.Resource(gvr), meta: s.meta.Resource(gvr), bulk: s.cfg.BacklogList, backlog: &s.backlog}
			inf = newInformer(self.listWatch(), gvr, inputIndexers)
		}
		_ = inf.SetTransform(transform)
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) { onWatchErr(err) })
		_, _ = inf.AddEventHandler(s.handler(gvr, key))
		wg.Add(1)
		go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
		return inf.GetStore(), inf.HasSynced
	}
	// What is rendered from must be listed before the first render.
	var syncs []cache.InformerSynced
	for _, r := range s.reads(served) {
		st, synced := add(r.gvr, r.fieldSelector, r.key, func(err error) { s.watchFailed(r.gvr, err) })
		*r.into, syncs = st, append(syncs, synced)
	}
	var policySynced cache.InformerSynced
	if served.machineConfigurations {
		// Only the MCO's own MachineConfiguration is read, so the
		// ClusterRole can name it (resourceNames) rather than grant all.
		// It is optional: its failures go with the policy, not the pools.
		var st cache.Store
		st, policySynced = add(MachineConfigurations, "metadata.name="+clusterMachineConfiguration, skewPolicyKey, s.policyWatchFailed)
		s.policy.mu.Lock()
		s.mcfgs, s.policy.synced = st, policySynced
		s.policy.mu.Unlock()
	}
	start := time.Now()
	if !cache.WaitForCacheSync(ctx.Done(), syncs...) {
		return
	}
	if policySynced != nil {
		// The policy gets a moment, so nodes are not admitted on none at
		// start; if it takes longer, its first list signals a reload.
		pctx, cancel := context.WithTimeout(ctx, policySyncWait)
		if !cache.WaitForCacheSync(pctx.Done(), policySynced) {
			s.log.Warn("the cluster's skew policy is not listed yet; serving without it until it is", "waited", policySyncWait)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if cache.WaitForCacheSync(ctx.Done(), policySynced) {
					s.signal()
				}
			}()
		}
		cancel()
	}
	s.log.Info("informer caches synced", "host", s.host, "controllerConfig", served.controllerConfigs,
		"skewPolicy", served.machineConfigurations, "imageMode", served.machineOS, "duration", time.Since(start))
	close(s.synced)
	s.signal()
	<-ctx.Done()
}

// read is one resource the source lists and watches before its first
// render, the key of what of an object can change what is served, and the
// store it fills.
type read struct {
	gvr           schema.GroupVersionResource
	fieldSelector string
	key           func(*unstructured.Unstructured) string
	into          *cache.Store
}

// reads are the resources the configuration and the API server call for.
func (s *Source) reads(served served) []read {
	r := []read{{MachineConfigs, "", machineConfigKey(s.cfg.Mode), &s.mcs}, {MachineConfigPools, "", s.poolKey, &s.pools}}
	if served.controllerConfigs {
		r = append(r, read{ControllerConfigs, "", controllerConfigKey, &s.ccs})
	}
	if served.osImageStreams {
		r = append(r, read{OSImageStreams, "metadata.name=" + osImageStreamName, osImageStreamKey, &s.streams})
	}
	if s.cfg.KubeconfigData {
		// Only kubeconfig-data is read, so a Role can name it.
		r = append(r, read{ConfigMaps, "metadata.name=" + KubeconfigDataName, kubeconfigDataKeyOf, &s.configMaps})
	}
	if served.machineOS {
		r = append(r, read{MachineOSConfigs, "", mosKey, &s.moscs}, read{MachineOSBuilds, "", mosKey, &s.mosbs})
	}
	if served.routes {
		r = append(r, read{Routes, "", routeKey, &s.routes})
	}
	return r
}

// resource is the client of gvr, in the one namespace read for the
// namespaced ones.
func resource(client dynamic.Interface, gvr schema.GroupVersionResource) dynamic.ResourceInterface {
	switch gvr {
	case ConfigMaps:
		return client.Resource(gvr).Namespace(MCONamespace)
	case Routes:
		return client.Resource(gvr).Namespace(registryNamespace)
	}
	return client.Resource(gvr)
}

// policySyncWait is how long the first render waits for the skew policy
// once everything it renders from is listed.
const policySyncWait = 5 * time.Second

// NewInformer lists and watches one resource as unstructured objects. It is
// dynamicinformer's informer without its factory, whose package links every
// typed client-go informer and clientset: about 40 MB of binary and 6 MB of
// heap at start for nothing this source reads.
func NewInformer(res dynamic.ResourceInterface, gvr schema.GroupVersionResource, fieldSelector string) cache.SharedIndexInformer {
	tweak := func(o *metav1.ListOptions) {
		if fieldSelector != "" {
			o.FieldSelector = fieldSelector
		}
	}
	return newInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return res.Watch(ctx, o)
		},
	}, gvr, nil)
}

func newInformer(lw cache.ListerWatcher, gvr schema.GroupVersionResource, indexers cache.Indexers) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformerWithOptions(lw, &unstructured.Unstructured{},
		cache.SharedIndexInformerOptions{ObjectDescription: gvr.String(), Indexers: indexers})
}

// stripManagedFields drops the field managers' bookkeeping, which is large
// and never read, from objects before they are cached.
// stripRenderedSpec also drops a rendered config's spec (self mode): an
// output no render reads (isRendered), each the size of a whole pool, of
// which a cluster keeps hundreds. A reader that wants one asks the API
// server (the controller comparing content, once per config).
func stripRenderedSpec(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok && isRendered(u) {
		delete(u.Object, "spec")
	}
	return stripManagedFields(obj)
}

func stripManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetManagedFields(nil)
	}
	return obj, nil
}
