package source

// NoticeKind is what happened; its names are the Kubernetes event reasons.
type NoticeKind string

const (
	// NoticeNodeRefused: the skew gate answered a node with the stub.
	NoticeNodeRefused NoticeKind = "NodeRefused"
	// NoticeRenderFailed: a pool's newest render failed; it serves an older one.
	NoticeRenderFailed NoticeKind = "RenderFailed"
	// NoticeFirstFetch: a real Ignition client fetched a rendered config
	// for the first time since this server started serving it.
	NoticeFirstFetch NoticeKind = "RenderedConfigFetched"
	// NoticeCertificateReloadFailed: the TLS serving certificate on disk
	// could not be loaded; the previous one is served.
	NoticeCertificateReloadFailed NoticeKind = "CertificateReloadFailed"
	// NoticeFirstbootFailed: a node reported that its first boot failed
	// (POST /v1/node-failure, machine-config-operator PR #6124).
	NoticeFirstbootFailed NoticeKind = "FirstbootFailed"
)

// Notice is something the people running the cluster should hear about,
// told about one pool. The server makes them (serve.Config.Notify); a
// source may pass them on to its cluster (source/kube's Events), which is
// why they are defined here, below the HTTP package.
type Notice struct {
	Kind NoticeKind
	Pool string
	// Message is one line for people, free of credentials.
	Message string
	// Err is the render error (NoticeRenderFailed), so a notifier can tell
	// an unreachable source from a broken MachineConfig.
	Err error
	// Rendered is the rendered config fetched (NoticeFirstFetch).
	Rendered string
}

// Warning reports whether the notice is about something wrong.
func (n Notice) Warning() bool { return n.Kind != NoticeFirstFetch }
