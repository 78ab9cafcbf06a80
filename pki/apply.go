package pki

import (
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ignition-mcs/mcs/source/kube"
)

// writer applies a pass's changes, or with dryRun only lists them.
type writer struct {
	c       Clients
	dryRun  bool
	changes []string // the writes made (dry run: that would be made)
	// ca is how far the pass's writes to the CA Secret got.
	ca caWrite
}

// caWrite is how far a pass's writes to the CA Secret got, in order.
type caWrite int

const (
	caUntouched caWrite = iota // nothing of it written: the CA in force is the one read
	caTouched                  // a write landed (a replace's delete) but not the new CA
	caWritten                  // the new CA: from then on a pass that stops leaves a rotation unfinished
)

// done records a write, verb kind ns/name, when err is nil; a write the
// API server refused because another writer changed (or created) the
// object since it was read is a *conflictError naming it.
func (w *writer) done(err error, verb, kind, ns, name, why string) error {
	obj := objectName(kind, ns, name)
	if err == nil {
		w.changes = append(w.changes, verb+" "+obj+": "+why)
		return nil
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return &conflictError{Objects: []string{obj}, Err: err}
	}
	return fmt.Errorf("%s %s: %w", verb, obj, err)
}

// putSecret creates s, or updates old to s's type, labels, annotations and
// data; a changed type (upstream's Opaque machine-config-server-tls) is a
// delete and create, as upstream's PreFlightChecks does.
func (w *writer) putSecret(ctx context.Context, old, s *corev1.Secret, why string) error {
	api := w.c.Kube.CoreV1().Secrets(s.Namespace)
	opts := metav1.CreateOptions{}
	if w.dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	switch {
	case old == nil:
		_, err := api.Create(ctx, s, opts)
		return w.done(err, "create", "secret", s.Namespace, s.Name, why)
	case old.Type != s.Type && old.Type != "":
		why = fmt.Sprintf("type %s → %s; %s", old.Type, s.Type, why)
		if w.dryRun {
			return w.done(nil, "replace", "secret", s.Namespace, s.Name, why)
		}
		// Two writes, each its own change: the delete can land and the
		// create then fail (another writer created it meanwhile).
		err := api.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &old.ResourceVersion}})
		if err := w.done(err, "delete", "secret", s.Namespace, s.Name, why+"; to be created again"); err != nil {
			return err
		}
		_, err = api.Create(ctx, s, opts)
		return w.done(err, "create", "secret", s.Namespace, s.Name, why)
	}
	next := old.DeepCopy()
	next.Type = old.Type
	next.Labels = merged(old.Labels, s.Labels)
	next.Annotations = merged(old.Annotations, s.Annotations)
	next.Data = s.Data
	if len(s.OwnerReferences) > 0 {
		next.OwnerReferences = s.OwnerReferences
	}
	_, err := api.Update(ctx, next, metav1.UpdateOptions{DryRun: opts.DryRun})
	return w.done(err, "update", "secret", s.Namespace, s.Name, why)
}

func merged(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

func (w *writer) putBundle(ctx context.Context, old *corev1.ConfigMap, bundle []byte, why string) error {
	api := w.c.Kube.CoreV1().ConfigMaps(mcoNamespace)
	var dry []string
	if w.dryRun {
		dry = []string{metav1.DryRunAll}
	}
	if old == nil {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: bundleName, Namespace: mcoNamespace,
			Annotations: map[string]string{"openshift.io/description": "CA bundle that stores all valid CAs for the MachineConfigServer TLS certificate"}},
			Data: map[string]string{bundleKey: string(bundle)}}
		_, err := api.Create(ctx, cm, metav1.CreateOptions{DryRun: dry})
		return w.done(err, "create", "configmap", mcoNamespace, bundleName, why)
	}
	next := old.DeepCopy()
	if next.Data == nil {
		next.Data = map[string]string{}
	}
	next.Data[bundleKey] = string(bundle)
	_, err := api.Update(ctx, next, metav1.UpdateOptions{DryRun: dry})
	return w.done(err, "update", "configmap", mcoNamespace, bundleName, why)
}

// applyPKI writes signer, bundle and serving certificate in that order, so
// the bundle names a CA before any certificate it signs is served.
func (w *writer) applyPKI(ctx context.Context, cl *cluster, d desired) error {
	if d.signerChanged {
		key, err := encodeKey(d.signer.key)
		if err != nil {
			return err
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: signerName, Namespace: mcoNamespace, Annotations: tlsAnnotations(d.signer.cert)},
			Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": encodeCerts(d.signer.cert), "tls.key": key, crossKey: encodeCerts(d.cross...)}}
		landed := len(w.changes)
		err = w.putSecret(ctx, cl.signerSec, s, reasonsOr(d.reasons, "new CA"))
		switch {
		case w.dryRun:
		case err == nil:
			w.ca = caWritten
		case len(w.changes) > landed:
			w.ca = caTouched
		}
		if err != nil {
			return fmt.Errorf("writing the CA: %w", err)
		}
	}
	bundle := encodeCerts(d.bundle...)
	if cl.bundleCM == nil || cl.bundleCM.Data[bundleKey] != string(bundle) {
		if err := w.putBundle(ctx, cl.bundleCM, bundle, fmt.Sprintf("%d unexpired CAs", len(d.bundle))); err != nil {
			return fmt.Errorf("writing the bundle: %w", err)
		}
	}
	chain := encodeCerts(append([]*x509.Certificate{d.serving.cert}, d.chain...)...)
	if d.servingChanged || cl.servingSec == nil || string(cl.servingSec.Data["tls.crt"]) != string(chain) || cl.servingSec.Type != corev1.SecretTypeTLS {
		key, err := encodeKey(d.serving.key)
		if err != nil {
			return err
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: servingName, Namespace: mcoNamespace, Annotations: tlsAnnotations(d.serving.cert)},
			Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": chain, "tls.key": key}}
		why := "its chain of cross-signatures changed"
		if d.servingChanged {
			why = reasonsOr(d.reasons, "new serving certificate")
		}
		if err := w.putSecret(ctx, cl.servingSec, s, why); err != nil {
			return fmt.Errorf("writing the serving certificate: %w", err)
		}
	}
	return nil
}

func reasonsOr(r []string, def string) string {
	if len(r) == 0 {
		return def
	}
	return strings.Join(r, "; ")
}

// ownerRef makes a pool own what is generated for it: the cluster's
// garbage collector removes it with the pool (mcs deletes token Secrets
// itself, at once).
func ownerRef(pool, uid string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: kube.MachineConfigPools.GroupVersion().String(), Kind: "MachineConfigPool", Name: pool, UID: types.UID(uid)}}
}

func (w *writer) deleteSecret(ctx context.Context, s *corev1.Secret, why string) error {
	var dry []string
	if w.dryRun {
		dry = []string{metav1.DryRunAll}
	}
	err := w.c.Kube.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{DryRun: dry})
	if apierrors.IsNotFound(err) {
		return nil // gone already, as wanted
	}
	return w.done(err, "delete", "secret", s.Namespace, s.Name, why)
}
