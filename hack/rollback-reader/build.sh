#!/usr/bin/env bash
# Builds the rollback readers the rollback rehearsals run into OUT (default
# $HOME/.cache/mcs-tools/rollback): ParseCompatibleVersion at the newest
# stable spec of Ignition v2.10.1 (3.2, as OpenShift 4.7 to 4.12 read; go.mod)
# and of v2.19.0 (3.4, as OpenShift 4.14 to 4.18 read; v2.19.0.mod, build tag
# ignition_v2_19), one main.go built against each through the Go module proxy
# (`go build -modfile`). Each is rebuilt only when missing or its stamp (a
# hash of its module and sources) no longer matches.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-${HOME}/.cache/mcs-tools/rollback}
# shellcheck source=../lib/tools.sh
source "$here/../lib/tools.sh"

mkdir -p "$out"
for version in v2.10.1 v2.19.0; do
	modfile=$here/go.mod tags=
	[[ $version == v2.10.1 ]] || modfile=$here/$version.mod tags=ignition_${version//./_}
	tags=${tags%_0}
	ldflags="-X main.version=$version"
	bin=$out/rollback-reader-$version
	stamp=$(module_stamp "$modfile" main.go "$ldflags $tags $(cat "$here"/read_*.go | sha256sum)" GOOS GOARCH)
	if up_to_date "$bin" "$stamp"; then
		echo "rollback-reader $version: up to date in $out"
		continue
	fi
	(GOFLAGS="-tags=$tags" build_verified "rollback-reader $version" "$modfile" . 0 "$ldflags" "$version" "$bin" "$stamp")
done
