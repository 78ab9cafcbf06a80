#!/usr/bin/env bash
# Builds the control plane the Kubernetes integration tests run (envtest's
# KUBEBUILDER_ASSETS) into OUT (default $HOME/.cache/mcs-tools/kube):
# kube-apiserver v1.34.4 and etcd v3.6.16, from the scratch modules next to
# this script, through the Go module proxy (setup-envtest would download
# release tarballs, which this machine cannot reach).
#
# A binary is rebuilt only when it is missing or the stamp next to it (a hash
# of its scratch module and link flags) no longer matches, so running this
# again is cheap and a bumped pin cannot leave a stale binary behind.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-${HOME}/.cache/mcs-tools/kube}
# shellcheck source=../lib/tools.sh
source "$here/../lib/tools.sh"

kube_version=v1.34.4

# binary → main package (built from inside its scratch module)
declare -A pkg=(
	[kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
	[etcd]=go.etcd.io/etcd/server/v3
)
# binary → the version it must report, checked after the build
declare -A want=(
	[kube-apiserver]=$kube_version
	[etcd]=3.6.16
)
bins=(etcd kube-apiserver)

ldflags() {
	case $1 in
	kube-apiserver)
		# Without these the server reports v0.0.0-master and clients that
		# check the version (and envtest's logs) cannot tell what ran.
		local minor=${kube_version#v1.}
		minor=${minor%%.*}
		printf '%s' "-s -w -X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
		;;
	etcd) printf '%s' "-s -w" ;;
	esac
}

stamp_of() { module_stamp "$here/$1/go.mod" tools.go "$(ldflags "$1")" GOOS GOARCH GOVERSION; }

mkdir -p "$out"
mapfile -t todo < <(stale "$out/" "${bins[@]}")
if ((${#todo[@]} == 0)); then
	echo "kube-tools: up to date in $out"
	exit 0
fi

for b in "${todo[@]}"; do
	echo "kube-tools: $b (cold: minutes on 2 cores)"
	build_verified kube-tools "$here/$b/go.mod" "${pkg[$b]}" 0 "$(ldflags "$b")" "${want[$b]}" "$out/$b" "$(stamp_of "$b")"
done
