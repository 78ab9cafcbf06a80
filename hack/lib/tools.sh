# Shared by the tool build scripts (hack/*/build.sh); sourced, not run.

GO=${GO:-go}

# module_stamp MODFILE FILE LDFLAGS GOENV... prints the stamp of a binary
# built from the scratch module whose go.mod is MODFILE: a hash of MODFILE,
# its go.sum (MODFILE's name less .mod, plus .sum, as `go build -modfile`
# reads it) and FILE next to it, of the link flags and of the `go env`
# values GOENV names.
module_stamp() {
	local modfile=$1 file=$2 ldflags=$3
	shift 3
	{
		cat "$modfile" "${modfile%.mod}.sum" "$(dirname "$modfile")/$file"
		printf '%s' "$ldflags"
		"$GO" env "$@"
	} | sha256sum | cut -d' ' -f1
}

# up_to_date BIN STAMP succeeds when BIN is built and its stamp file holds
# STAMP.
up_to_date() {
	[[ -x $1 && -f $1.stamp && $(cat "$1.stamp") == "$2" ]]
}

# stale PREFIX NAME... prints each NAME whose binary ${PREFIX}NAME is not
# up to date with `stamp_of NAME` (the calling script's).
stale() {
	local prefix=$1 name
	shift
	for name; do
		up_to_date "$prefix$name" "$(stamp_of "$name")" || printf '%s\n' "$name"
	done
}

# build_verified LABEL MODFILE PKG CGO LDFLAGS WANT BIN STAMP builds PKG from
# the scratch module whose go.mod is MODFILE (in its directory, which holds a
# go.mod: one directory can build against several) into BIN, checks that
# `BIN --version` mentions WANT, and writes STAMP next to it. It builds next
# to BIN and renames, so an interrupted build never leaves a binary that
# looks complete.
build_verified() {
	local label=$1 modfile=$2 pkg=$3 cgo=$4 ldflags=$5 want=$6 bin=$7 stamp=$8
	local start=$SECONDS tmp got
	echo "$label: building $bin"
	tmp=$(mktemp "$(dirname "$bin")/.$(basename "$bin").XXXXXX")
	# shellcheck disable=SC2064 # expand now: $tmp is local
	trap "rm -f '$tmp'" EXIT
	(cd "$(dirname "$modfile")" && CGO_ENABLED=$cgo "$GO" build -modfile "$modfile" -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg")
	got=$("$tmp" --version 2>&1 || true)
	if [[ $got != *"$want"* ]]; then
		echo "$label: $tmp reports version \"$got\", want $want" >&2
		exit 1
	fi
	chmod 0755 "$tmp"
	mv -f "$tmp" "$bin"
	trap - EXIT
	printf '%s\n' "$stamp" >"$bin.stamp"
	echo "$label: built $(basename "$bin") in $((SECONDS - start))s"
}
