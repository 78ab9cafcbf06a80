#!/usr/bin/env bash
# Builds the real Ignition clients the end-to-end tests run, into OUT (default
# $HOME/.cache/mcs-tools/ignition), one binary per version: ignition-vX.Y.Z.
#
# A client is rebuilt only when its binary is missing or the stamp next to it
# (a hash of its scratch module and link flags) no longer matches, so running
# this again is cheap and a bumped pin cannot leave a stale client behind.
#
# Every client is linked with kernelCmdlinePath=/dev/null: the tests give the
# client its config through IGNITION_CONFIG_FILE, and the host's /proc/cmdline
# must never be able to point it elsewhere. v2.24.0 and v0.35.0 have no
# environment override for that path, so it has to be fixed at link time.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-${HOME}/.cache/mcs-tools/ignition}
# shellcheck source=../lib/tools.sh
source "$here/../lib/tools.sh"

# version → main package; the main package lives under internal/ and may be
# built by path from another module.
declare -A pkg=(
	[v2.27.0]=github.com/coreos/ignition/v2/internal
	[v2.24.0]=github.com/coreos/ignition/v2/internal
	[v2.19.0]=github.com/coreos/ignition/v2/internal
	[v2.14.0]=github.com/coreos/ignition/v2/internal
	[v2.9.0]=github.com/coreos/ignition/v2/internal
	[v2.0.0]=github.com/coreos/ignition/v2/internal
	[v0.35.0]=github.com/coreos/ignition/internal
)
# One client per boot-image era: the newest spec each reads is 3.6, 3.5,
# 3.4, 3.3, 3.2, 3.0 and 2.2 (internal/ignclient.Known).
versions=(v2.27.0 v2.24.0 v2.19.0 v2.14.0 v2.9.0 v2.0.0 v0.35.0)

ldflags() {
	local v=$1 base=github.com/coreos/ignition/v2/internal
	[[ $v == v0.* ]] && base=github.com/coreos/ignition/internal
	# version.Raw makes the client send "User-Agent: Ignition/$v"; without it
	# the client says "was not built properly".
	local ld="-X $base/version.Raw=$v -X $base/distro.kernelCmdlinePath=/dev/null"
	# A scratch root has no SELinux policy to relabel against (v0.x defaults to off).
	[[ $v == v2.* ]] && ld+=" -X $base/distro.selinuxRelabel=false"
	printf '%s' "$ld"
}

stamp_of() { module_stamp "$here/$1/go.mod" tools.go "$(ldflags "$1")" GOOS GOARCH; }

# Every client needs cgo and libblkid (blkid.go links -lblkid); v0.35.0 too.
have_blkid() {
	command -v cc >/dev/null 2>&1 &&
		printf '#include <blkid/blkid.h>\nint main(void){return 0;}\n' |
		cc -x c - -o /dev/null -lblkid >/dev/null 2>&1
}

install_blkid() {
	have_blkid && return 0
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "ignition-clients: need a C compiler and libblkid headers (libblkid-dev / libblkid-devel)" >&2
		return 1
	fi
	local sudo=()
	if [[ $(id -u) != 0 ]]; then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "ignition-clients: run as root or install libblkid-dev and gcc yourself" >&2
			return 1
		fi
		sudo=(sudo -n)
	fi
	local want=(libblkid-dev)
	command -v cc >/dev/null 2>&1 || want+=(gcc libc6-dev)
	# Update the package lists only when they do not know the package yet.
	# (Not a pipe into grep -q: with pipefail its early exit would read as failure.)
	local policy
	policy=$(apt-cache policy "${want[@]}" 2>/dev/null || true)
	if [[ $(grep -c 'Candidate: [0-9]' <<<"$policy") != "${#want[@]}" ]]; then
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
	fi
	echo "ignition-clients: apt-get install ${want[*]}" >&2
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${want[@]}"
	have_blkid || {
		echo "ignition-clients: libblkid still unusable after install" >&2
		return 1
	}
}

mkdir -p "$out"
mapfile -t todo < <(stale "$out/ignition-" "${versions[@]}")
if ((${#todo[@]} == 0)); then
	echo "ignition-clients: up to date in $out"
	exit 0
fi

install_blkid

for v in "${todo[@]}"; do
	build_verified ignition-clients "$here/$v/go.mod" "${pkg[$v]}" 1 "$(ldflags "$v")" "$v" "$out/ignition-$v" "$(stamp_of "$v")"
done
