// Scratch module: the Ignition config reader of a release whose newest stable spec is 3.4 (OpenShift 4.14 to 4.18's), built by `make rollback-reader`; not part of mcs.
module github.com/ignition-mcs/mcs/hack/rollback-reader/v2.19.0

go 1.24.0

require github.com/coreos/ignition/v2 v2.19.0

require (
	github.com/aws/aws-sdk-go v1.53.5 // indirect
	github.com/coreos/go-json v0.0.0-20230131223807-18775e0fb4fb // indirect
	github.com/coreos/go-semver v0.3.1 // indirect
	github.com/coreos/go-systemd/v22 v22.5.0 // indirect
	github.com/coreos/vcontext v0.0.0-20230201181013-d72178a18687 // indirect
	github.com/vincent-petithory/dataurl v1.0.0 // indirect
)
