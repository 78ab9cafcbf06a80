// Scratch module: the Ignition config reader of a release whose newest stable spec is 3.2, built by `make rollback-reader`; not part of mcs.
module github.com/ignition-mcs/mcs/hack/rollback-reader

go 1.24.0

require github.com/coreos/ignition/v2 v2.10.1

require (
	github.com/coreos/go-json v0.0.0-20170920214419-6a2fe990e083 // indirect
	github.com/coreos/go-semver v0.3.0 // indirect
	github.com/coreos/go-systemd/v22 v22.0.0 // indirect
	github.com/coreos/vcontext v0.0.0-20210407161507-4ee6c745c8bd // indirect
	github.com/vincent-petithory/dataurl v0.0.0-20160330182126-9a301d65acbb // indirect
)
