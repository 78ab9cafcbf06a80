// Scratch module that pins the spec-2 Ignition client built by `make ignition-clients`; not part of mcs.
// Ignition v0.35.0 predates modules, so its dependencies are pinned here by hand.
module github.com/ignition-mcs/mcs/hack/ignition-clients/v0.35.0

go 1.25.0

require github.com/coreos/ignition v0.35.0

require (
	github.com/ajeddeloh/go-json v0.0.0-20200220154158-5ae607161559 // indirect
	github.com/aws/aws-sdk-go v1.55.8 // indirect
	github.com/coreos/go-semver v0.3.1 // indirect
	github.com/coreos/go-systemd v0.0.0-20181031085051-9002847aa142 // indirect
	github.com/godbus/dbus v0.0.0-20181101234600-2ff6f7ffd60f // indirect
	github.com/jmespath/go-jmespath v0.4.0 // indirect
	github.com/pin/tftp v2.1.0+incompatible // indirect
	github.com/sigma/bdoor v0.0.0-20160202064022-babf2a4017b0 // indirect
	github.com/sigma/vmw-guestinfo v0.0.0-20160204083807-95dd4126d6e8 // indirect
	github.com/smartystreets/goconvey v1.8.1 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/vincent-petithory/dataurl v1.0.0 // indirect
	github.com/vmware/vmw-guestinfo v0.0.0-20220317130741-510905f0efa3 // indirect
	github.com/vmware/vmw-ovflib v0.0.0-20170608004843-1f217b9dc714 // indirect
	go4.org v0.0.0-20200104003542-c7e774b10ea0 // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/text v0.40.0 // indirect
)
