package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ignition-mcs/mcs/deploy"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

const webhookConfigUsage = `Usage: mcs admit webhook-config (--url URL | --service NAMESPACE/NAME) --ca-file FILE

Prints the MutatingWebhookConfiguration that sends MachineConfig creates and
updates to mcs admit, for a cluster without OpenShift's service CA (kind, a
test API server, any Kubernetes): the rules, timeout and failure policy of
deploy/openshift/admit/webhook.yaml, with the API server calling URL (mcs
admit running outside the cluster) or the Service NAMESPACE/NAME on port 443,
and trusting the CA certificates in FILE. Apply it with kubectl apply -f -
(docs/admission.md#try-it-on-any-kubernetes).
`

// runAdmitWebhookConfig is `mcs admit webhook-config`.
func runAdmitWebhookConfig(args []string, stdout, stderr io.Writer) error {
	fs := cmdline.NewFlagSet("mcs admit webhook-config", webhookConfigUsage, stderr)
	var c deploy.WebhookClient
	var service, caFile string
	fs.StringVar(&c.URL, "url", "", "where the API server calls mcs admit: https://HOST:PORT (path /mutate unless given)")
	fs.StringVar(&service, "service", "", "or the Service `NAMESPACE/NAME` in front of mcs admit (port 443, path /mutate)")
	fs.StringVar(&caFile, "ca-file", "", "the CA certificate(s), PEM, that signed mcs admit's serving certificate")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	if (c.URL == "") == (service == "") {
		return cmdline.Mistake(fs, errors.New("want --url or --service, one of them"))
	}
	if service != "" {
		ns, name, ok := strings.Cut(service, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return cmdline.Mistake(fs, fmt.Errorf("--service %q: want NAMESPACE/NAME", service))
		}
		c.Namespace, c.Name = ns, name
	}
	if caFile == "" {
		return cmdline.Mistake(fs, errors.New("--ca-file: want the CA that signed mcs admit's certificate (the API server verifies it)"))
	}
	var err error
	if c.CABundle, err = os.ReadFile(caFile); err != nil {
		return fmt.Errorf("--ca-file: %w", err)
	}
	out, err := deploy.AdmitWebhook(c)
	var ce *deploy.ClientError
	if errors.As(err, &ce) {
		flag := map[string]string{"url": "--url", "service": "--service", "caBundle": "--ca-file " + caFile}[ce.Field]
		return cmdline.Mistake(fs, fmt.Errorf("%s: %w", flag, ce.Err))
	}
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}
