// Scratch module that pins the Ignition client built by `make ignition-clients`; not part of mcs.
module github.com/ignition-mcs/mcs/hack/ignition-clients/v2.0.0

go 1.25.0

require github.com/coreos/ignition/v2 v2.0.0

require (
	github.com/ajeddeloh/go-json v0.0.0-20170920214419-6a2fe990e083 // indirect
	github.com/aws/aws-sdk-go v1.19.11 // indirect
	github.com/coreos/go-semver v0.3.0 // indirect
	github.com/coreos/go-systemd v0.0.0-20181031085051-9002847aa142 // indirect
	github.com/coreos/vcontext v0.0.0-20190529201340-22b159166068 // indirect
	github.com/godbus/dbus v0.0.0-20181025153459-66d97aec3384 // indirect
	github.com/jmespath/go-jmespath v0.0.0-20180206201540-c2b33e8439af // indirect
	github.com/pin/tftp v2.1.0+incompatible // indirect
	github.com/vincent-petithory/dataurl v0.0.0-20160330182126-9a301d65acbb // indirect
	github.com/vmware/vmw-guestinfo v0.0.0-20170707015358-25eff159a728 // indirect
	github.com/vmware/vmw-ovflib v0.0.0-20170608004843-1f217b9dc714 // indirect
	golang.org/x/net v0.0.0-20190228165749-92fc7df08ae7 // indirect
	golang.org/x/text v0.3.0 // indirect
)
