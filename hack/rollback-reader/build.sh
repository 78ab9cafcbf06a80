#!/usr/bin/env bash
# Builds the rollback readers the rollback rehearsals run into OUT (default
# $HOME/.cache/mcs-tools/rollback): the config.Parse of Ignition v2.10.1
# (newest stable spec 3.2; go.mod) and of v2.19.0 (newest 3.4, as OpenShift
# 4.14 to 4.18 read; v2.19.0.mod), one main.go built against each through the
# Go module proxy (`go build -modfile`). Each is rebuilt only when missing or
# its stamp (a hash of its module) no longer matches.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-${HOME}/.cache/mcs-tools/rollback}
# shellcheck source=../lib/tools.sh
source "$here/../lib/tools.sh"

mkdir -p "$out"
for version in v2.10.1 v2.19.0; do
	modfile=$here/go.mod
	[[ $version == v2.10.1 ]] || modfile=$here/$version.mod
	ldflags="-X main.version=$version"
	bin=$out/rollback-reader-$version
	stamp=$(module_stamp "$modfile" main.go "$ldflags" GOOS GOARCH)
	if up_to_date "$bin" "$stamp"; then
		echo "rollback-reader $version: up to date in $out"
		continue
	fi
	(build_verified "rollback-reader $version" "$modfile" . 0 "$ldflags" "$version" "$bin" "$stamp")
done
