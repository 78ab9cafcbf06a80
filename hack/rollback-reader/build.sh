#!/usr/bin/env bash
# Builds the rollback reader the controller's rollback rehearsal runs into
# OUT (default $HOME/.cache/mcs-tools/rollback): Ignition v2.10.1's
# config.Parse, whose newest stable spec is 3.2, from the scratch module next
# to this script, through the Go module proxy. Rebuilt only when the binary
# is missing or its stamp (a hash of the module) no longer matches.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-${HOME}/.cache/mcs-tools/rollback}
# shellcheck source=../lib/tools.sh
source "$here/../lib/tools.sh"

version=v2.10.1
bin=$out/rollback-reader-$version
stamp=$(module_stamp "$here" main.go "" GOOS GOARCH)

mkdir -p "$out"
if up_to_date "$bin" "$stamp"; then
	echo "rollback-reader: up to date in $out"
	exit 0
fi
build_verified rollback-reader "$here" . 0 "" "$version" "$bin" "$stamp"
