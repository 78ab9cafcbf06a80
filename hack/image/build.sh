#!/usr/bin/env bash
# Builds the mcs image IMAGE (default localhost/mcs:dev): the static binary,
# then the Containerfile with podman (or buildah) over a context holding only
# that binary. Prints the image's size. `make image` and the image test run it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
image=${1:-localhost/mcs:dev}
GO=${GO:-go}

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
# Static (no cgo) and stripped: the image has no libc to link against.
(cd "$root" && CGO_ENABLED=0 "$GO" build -buildvcs=auto -trimpath -ldflags='-s -w' -o "$ctx/mcs" ./cmd/mcs)

if command -v podman >/dev/null 2>&1; then
	podman build --quiet --tag "$image" --file "$root/Containerfile" "$ctx" >/dev/null
	size=$(podman image inspect --format '{{.Size}}' "$image")
elif command -v buildah >/dev/null 2>&1; then
	buildah bud --quiet --tag "$image" --file "$root/Containerfile" "$ctx" >/dev/null
	size=$(buildah inspect --type image --format '{{.Size}}' "$image" 2>/dev/null || echo unknown)
else
	echo "image: neither podman nor buildah is installed (make container-engine installs podman)" >&2
	exit 1
fi
echo "image: $image, $size bytes (binary $(stat -c %s "$ctx/mcs") bytes)"
