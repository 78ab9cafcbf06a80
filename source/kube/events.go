package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/ignition-mcs/mcs/source"
)

// eventComponent is the source.component of every Event mcs writes: it
// stands in for OpenShift's machine-config-server.
const eventComponent = "machine-config-server"

// Events is where the recorder writes: core/v1 Events. A cluster-scoped
// object's Events live in the default namespace, which is the only one the
// Role in deploy/ lets mcs write to.
var Events = schema.GroupVersionResource{Version: "v1", Resource: "events"}

// eventMessageMax bounds an Event's message: `oc describe` shows it whole.
const eventMessageMax = 1024

// EventsConfig configures an EventNotifier.
type EventsConfig struct {
	// Host names this replica in each Event's source (the pod's name).
	Host string
	// Component is each Event's source.component (default
	// machine-config-server; the controller is upstream's
	// machineconfigcontroller-rendercontroller).
	Component string
	// Correlator tunes the aggregation and rate limits; the zero value is
	// client-go's default: per pool and reason, a burst of 25 writes, then
	// one every 5 minutes, and 10 similar messages within 10 minutes
	// combined into one Event.
	Correlator record.CorrelatorOptions
}

// EventNotifier tells the cluster what the server notices, as Events on
// the MachineConfigPool concerned, through client-go's event recorder:
// repeated Events are counted on one object and a flood is rate-limited, so
// a node's boot loop cannot flood the API server. source.Notice reasons
// become the Events' reasons.
type EventNotifier struct {
	src         *Source
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
}

// Events returns a notifier writing Events as the source's REST config.
// Stop it with Shutdown.
func (s *Source) Events(cfg EventsConfig) (*EventNotifier, error) {
	rc := rest.CopyConfig(s.cfg.REST)
	if rc.UserAgent == "" {
		rc.UserAgent = "mcs"
	}
	// A client of its own, so Events never wait behind the informers'
	// requests in one rate limiter, nor count as the source's API errors.
	client, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes events: %w", err)
	}
	corr := cfg.Correlator
	if corr.SpamKeyFunc == nil {
		corr.SpamKeyFunc = spamKey
	}
	if cfg.Component == "" {
		cfg.Component = eventComponent
	}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(corr))
	b.StartRecordingToSink(&eventSink{client: client})
	return &EventNotifier{
		src:         s,
		broadcaster: b,
		recorder:    b.NewRecorder(runtime.NewScheme(), corev1.EventSource{Component: cfg.Component, Host: cfg.Host}),
	}, nil
}

// spamKey rate-limits per object and reason, not per object alone
// (client-go's default): a boot loop's refusals must not use up the budget
// that tells of a broken render.
func spamKey(e *corev1.Event) string {
	o := e.InvolvedObject
	return strings.Join([]string{e.Source.Component, e.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion, e.Type, e.Reason}, "\x00")
}

// Notify records n as an Event on its pool. It does not block: past the
// recorder's queue, Events are dropped. Failures to reach the API server are
// not told to it.
func (e *EventNotifier) Notify(n source.Notice) {
	var api *apiError
	var notSynced *notSyncedError
	if errors.As(n.Err, &api) || errors.As(n.Err, &notSynced) {
		return
	}
	typ := corev1.EventTypeNormal
	if n.Warning() {
		typ = corev1.EventTypeWarning
	}
	e.recorder.Event(e.poolRef(n.Pool), typ, string(n.Kind), truncate(n.Message, eventMessageMax))
}

// Record records an Event of the type (Normal, Warning) on a pool, as Notify
// does: the controller's reasons are upstream's render controller's.
func (e *EventNotifier) Record(pool, eventType, reason, message string) {
	e.recorder.Event(e.poolRef(pool), eventType, reason, truncate(message, eventMessageMax))
}

// Shutdown stops the recorder; Events not yet written are dropped.
func (e *EventNotifier) Shutdown() { e.broadcaster.Shutdown() }

// poolRef refers to a pool, with its UID once the informer has it, so
// `oc describe machineconfigpool` lists the Events.
func (e *EventNotifier) poolRef(pool string) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{APIVersion: MachineConfigPools.GroupVersion().String(), Kind: "MachineConfigPool", Name: pool}
	if e.src.Synced() {
		if o, ok, _ := e.src.pools.GetByKey(pool); ok {
			if u, ok := o.(*unstructured.Unstructured); ok {
				ref.UID = u.GetUID()
			}
		}
	}
	return ref
}

func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// eventSink writes Events through the dynamic client, which spares the
// binary client-go's typed clientset and its scheme of every API group.
type eventSink struct{ client dynamic.Interface }

func (k *eventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	u, err := toEventObject(e)
	if err != nil {
		return nil, err
	}
	return fromEventObject(k.client.Resource(Events).Namespace(e.Namespace).Create(context.TODO(), u, metav1.CreateOptions{}))
}

func (k *eventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	u, err := toEventObject(e)
	if err != nil {
		return nil, err
	}
	return fromEventObject(k.client.Resource(Events).Namespace(e.Namespace).Update(context.TODO(), u, metav1.UpdateOptions{}))
}

func (k *eventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return fromEventObject(k.client.Resource(Events).Namespace(e.Namespace).Patch(context.TODO(), e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}))
}

func toEventObject(e *corev1.Event) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(e)
	if err != nil {
		return nil, &rest.RequestConstructionError{Err: err}
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("v1")
	u.SetKind("Event")
	return u, nil
}

func fromEventObject(u *unstructured.Unstructured, err error) (*corev1.Event, error) {
	if err != nil {
		return nil, err
	}
	e := &corev1.Event{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, e); err != nil {
		return nil, fmt.Errorf("decoding the Event the API server returned: %w", err)
	}
	return e, nil
}
