package controller

import (
	"fmt"

	"github.com/ignition-mcs/mcs/render"
)

// The Event types (corev1.EventTypeNormal, EventTypeWarning).
const (
	eventNormal  = "Normal"
	eventWarning = "Warning"
)

// eventComponent is upstream's render controller's Event source.
const eventComponent = "machineconfigcontroller-rendercontroller"

// annotationOSImageURLOverridden is set on a rendered config whose
// MachineConfigs override the release's OS image.
const annotationOSImageURLOverridden = "machineconfiguration.openshift.io/os-image-url-overridden"

// eventLog tells the cluster what upstream's render controller tells it,
// as Events on the pool, through the recorder the caller passes
// (Config.Events); nothing when there is none.
type eventLog struct {
	record func(pool, eventType, reason, message string)
	m      *metrics
}

func (e *eventLog) emit(pool, typ, reason, message string) {
	if e == nil || e.record == nil {
		return
	}
	e.m.events.WithLabelValues(reason).Inc()
	e.record(pool, typ, reason, message)
}

// generated is told of a rendered config created: upstream's
// RenderedConfigGenerated, and OSImageURLOverridden when its MachineConfigs
// override the OS image (upstream records that one on the rendered config;
// here it is on the pool, where `oc describe machineconfigpool` shows it).
func (w *writer) generated(res *render.Result, baseImage string) {
	a := res.MachineConfig.Metadata.Annotations
	if w.dryRun {
		return
	}
	w.events.emit(res.Pool, eventNormal, "RenderedConfigGenerated", fmt.Sprintf("%s successfully generated (release version: %s, controller version: %s)",
		res.Name, a[render.AnnotationReleaseImageVersion], a[render.AnnotationGeneratedByController]))
	if a[annotationOSImageURLOverridden] == "true" {
		w.events.emit(res.Pool, eventNormal, "OSImageURLOverridden", fmt.Sprintf("OSImageURL was overridden via machineconfig in %s (was: %s is: %s)",
			res.Name, baseImage, res.MachineConfig.Spec.OSImageURL))
	}
}

// osImageURL sets os_image_url_override{pool}, as upstream does on every sync.
func (w *writer) osImageURL(res *render.Result) {
	v := 0.0
	if res.MachineConfig.Metadata.Annotations[annotationOSImageURLOverridden] == "true" {
		v = 1
	}
	w.m.osImageURLOverride.WithLabelValues(res.Pool).Set(v)
}
