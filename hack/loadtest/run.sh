#!/usr/bin/env bash
# Load test: mcs against a bare net/http server writing the same bytes, on
# loopback, with wrk. Prints a table of requests/s and p99 per client header,
# the ratios, startup-to-ready time and peak RSS. Bounded: each run lasts
# DURATION; everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${DIR:-../shared/realdata/aws}
POOL=${POOL:-worker}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-8}
REPS=${REPS:-3}
THREADS=${THREADS:-2}
OUT=${OUT:-}
command -v wrk >/dev/null || { echo "wrk missing: make bench installs it" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

go build -o "$tmp/mcs" ./cmd/mcs
go build -o "$tmp/baseline" ./hack/baseline

start=$(date +%s%N)
"$tmp/mcs" --dir "$DIR" --listen-plain 127.0.0.1:0 --listen-tls '' --log-level error >"$tmp/mcs.out" 2>"$tmp/mcs.err" &
mcs_pid=$!; pids+=("$mcs_pid")
for _ in $(seq 200); do grep -q listening "$tmp/mcs.out" 2>/dev/null && break; sleep 0.01; done
url=$(grep -o 'http://[^ ]*' "$tmp/mcs.out" | head -n1)
until curl -sf "$url/readyz" >/dev/null; do sleep 0.005; done
ready_ms=$(( ($(date +%s%N) - start) / 1000000 ))

declare -A headers=(
  [3.6.0]="application/vnd.coreos.ignition+json;version=3.6.0, */*;q=0.1|Ignition/v2.27.0"
  [3.4.0]="application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1|Ignition/v2.15.0"
  [2.2.0]="application/vnd.coreos.ignition+json; version=2.2.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1|Ignition/v0.35.0"
)

# wrk prints "Requests/sec: N" and, with --latency, "99% Xms".
measure() { # url accept ua -> "rps p99_ms"
  local out; out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -H "Accept: $2" -H "User-Agent: $3" "$1")
  local rps p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; print v}' <<<"$out")
  echo "$rps $p99"
}

# median of each column of a file of "rps p99" lines
median() {
  local n; n=$(wc -l <"$1")
  echo "$(cut -d' ' -f1 "$1" | sort -g | sed -n "$(( (n+1)/2 ))p") $(cut -d' ' -f2 "$1" | sort -g | sed -n "$(( (n+1)/2 ))p")"
}

rss_peak=0
sample_rss() { local kb; kb=$(awk '/VmRSS/ {print $2}' /proc/"$mcs_pid"/status); (( kb > rss_peak )) && rss_peak=$kb; true; }

{
echo "| client | bytes | mcs req/s | baseline req/s | ratio | mcs p99 ms | baseline p99 ms | p99 ratio |"
echo "|---|---|---|---|---|---|---|---|"
for spec in 3.6.0 3.4.0 2.2.0; do
  IFS='|' read -r accept ua <<<"${headers[$spec]}"
  curl -sf -H "Accept: $accept" -A "$ua" "$url/config/$POOL" -o "$tmp/body-$spec"
  ctype="application/vnd.coreos.ignition+json;version=$spec"
  "$tmp/baseline" --body "$tmp/body-$spec" --content-type "$ctype" >"$tmp/base.out" 2>&1 &
  bpid=$!; pids+=("$bpid")
  for _ in $(seq 200); do grep -q listening "$tmp/base.out" 2>/dev/null && break; sleep 0.01; done
  burl="http://$(awk '/listening/ {print $3}' "$tmp/base.out")"
  ( while sleep 0.5; do sample_rss; echo $rss_peak >"$tmp/rss"; done ) & spid=$!
  # Alternate mcs and baseline REPS times and take medians: on two cores
  # shared with wrk, single runs of either vary by tens of percent.
  : >"$tmp/m"; : >"$tmp/b"
  for _ in $(seq "$REPS"); do
    measure "$url/config/$POOL" "$accept" "$ua" >>"$tmp/m"
    measure "$burl/" "$accept" "$ua" >>"$tmp/b"
  done
  kill $spid 2>/dev/null || true
  kill "$bpid" 2>/dev/null || true
  read -r m_rps m_p99 < <(median "$tmp/m")
  read -r b_rps b_p99 < <(median "$tmp/b")
  awk -v s="$spec ($ua)" -v n="$(wc -c <"$tmp/body-$spec")" -v mr="$m_rps" -v br="$b_rps" -v mp="$m_p99" -v bp="$b_p99" \
    'BEGIN { printf "| %s | %d | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f |\n", s, n, mr, br, mr/br, mp, bp, mp/bp }'
done
rss_kb=$(cat "$tmp/rss" 2>/dev/null || echo 0)
echo
echo "startup to ready: ${ready_ms} ms ($DIR, every pool at every spec precomputed)"
echo "peak RSS under load: $(( rss_kb / 1024 )) MiB"
echo "wrk: $THREADS threads, $CONNS connections, $DURATION per run, median of $REPS alternating runs; machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go version | awk '{print $3}')"
} | if [ -n "$OUT" ]; then tee "$OUT"; else cat; fi
