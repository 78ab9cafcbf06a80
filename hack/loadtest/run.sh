#!/usr/bin/env bash
# Load test: mcs against a bare net/http server writing the same bytes, on
# loopback, with wrk. For each number of pools in POOLS (2: DIR as it is;
# more: DIR plus custom pools, as cmd/dev/scale builds them, requests cycling
# through every worker-derived pool) and each client era, prints requests/s
# and p50/p99 of both and their ratios (medians of REPS alternating runs),
# startup-to-ready time and peak RSS. Bounded: each run lasts DURATION;
# everything it starts is stopped on exit.
#
# PROFILE=DIR builds mcs with -tags pprof and saves, per pool count and
# era, a CPU profile and a runtime trace of mcs taken during one extra run.
# PIN="S W" runs the servers on CPU list S and wrk on W (taskset): on a
# machine other work shares, the servers then compete with it, not with
# wrk. Each row ends with the load average when it was measured.
#
# A step that fails stops the run and says which (line and command), and
# whether mcs was still running (then this script stopped it) or had
# exited (its status and the end of its stderr): a run once ended with mcs
# gone and nothing to tell why.
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
DIR=${DIR:-../shared/realdata/aws}
POOLS=${POOLS:-2 102}
DURATION=${DURATION:-4s}
CONNS=${CONNS:-32}
REPS=${REPS:-7}
THREADS=${THREADS:-2}
ERAS=${ERAS:-3.6.0 3.4.0 3.0.0 2.2.0}
MCS=${MCS:-}
PROFILE=${PROFILE:-}
PIN=${PIN:-}
read -r PIN_SERVER PIN_WRK <<<"$PIN"
on_server=() on_wrk=() # taskset execs the command: $! stays its pid
if [ -n "$PIN" ]; then on_server=(taskset -c "$PIN_SERVER") on_wrk=(taskset -c "$PIN_WRK"); fi
OUT=${OUT:-}
command -v wrk >/dev/null || { echo "wrk missing: make bench installs it" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
mcs_pid=
trap 'echo "loadtest: line $LINENO: $BASH_COMMAND: exit $?" >&2' ERR
cleanup() {
  local rc=$?
  if (( rc != 0 )) && [ -n "$mcs_pid" ]; then
    if kill -0 "$mcs_pid" 2>/dev/null; then
      echo "loadtest: mcs (pid $mcs_pid) was running when the run stopped; stopping it" >&2
    else
      local st=0; wait "$mcs_pid" 2>/dev/null || st=$?
      echo "loadtest: mcs (pid $mcs_pid) had exited, status $st (128+N: signal N); the end of its stderr:" >&2
      tail -n 20 "$tmp/mcs.err" >&2 || true
    fi
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"
}
trap cleanup EXIT

if [ -z "$MCS" ]; then
  MCS=$tmp/mcs
  go build ${PROFILE:+-tags pprof} -o "$MCS" ./cmd/mcs
fi
go build -o "$tmp/baseline" ./cmd/dev/baseline
[ -z "$PROFILE" ] || mkdir -p "$PROFILE"

declare -A headers=(
  [3.6.0]="application/vnd.coreos.ignition+json;version=3.6.0, */*;q=0.1|Ignition/v2.27.0"
  [3.4.0]="application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1|Ignition/v2.15.0"
  [3.0.0]="application/vnd.coreos.ignition+json;version=3.0.0, */*;q=0.1|Ignition/v2.2.0"
  [2.2.0]="application/vnd.coreos.ignition+json; version=2.2.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1|Ignition/v0.35.0"
)

# Requests cycle through the paths in $tmp/paths (one a line), each wrk
# thread from its own place in the list.
cat >"$tmp/cycle.lua" <<'EOF'
local paths, i = {}, 0
for line in io.lines(os.getenv("PATHS_FILE")) do paths[#paths + 1] = line end
function setup(thread) thread:set("offset", math.random(#paths)) end
function init() i = tonumber(offset) or 0 end
function request() i = i % #paths + 1; return wrk.format(nil, paths[i]) end
EOF

# cpu_ticks pid: the process's user+system time in clock ticks.
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' /proc/"$1"/stat; }

# wrk prints "Requests/sec: N", "N requests in" and, with --latency, "50% X"
# and "99% X". The server's CPU time per request, unlike the other figures,
# holds on a machine other work shares.
measure() { # url accept ua pid -> "rps p50_ms p99_ms cpu_us_per_request"
  local c0 out c1; c0=$(cpu_ticks "$4")
  out=$(PATHS_FILE="$tmp/paths" "${on_wrk[@]}" wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -s "$tmp/cycle.lua" -H "Accept: $2" -H "User-Agent: $3" "$1")
  c1=$(cpu_ticks "$4") # fails (and stops the run) when the server is gone
  awk -v ticks=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" '
    function ms(v) { if (v ~ /us$/) { sub(/us/,"",v); return v/1000 } if (v ~ /ms$/) { sub(/ms/,"",v); return v } if (v ~ /s$/) { sub(/s/,"",v); return v*1000 } return v }
    /Requests\/sec/ { rps = $2 } $1=="50%" { p50 = ms($2) } $1=="99%" { p99 = ms($2) } / requests in / { n = $1 }
    /Non-2xx/ { bad = 1 }
    END { if (bad) { print "non-2xx answers" > "/dev/stderr"; exit 1 } print rps, p50, p99, ticks / hz * 1e6 / n }' <<<"$out"
}

# median of each column of a file of "rps p50 p99 cpu" lines
median() {
  local n; n=$(wc -l <"$1")
  for c in 1 2 3 4; do cut -d' ' -f$c "$1" | sort -g | sed -n "$(( (n+1)/2 ))p"; done | paste -sd' '
}

wait_listening() { # file -> address; 30 s at most (a loaded machine starts slowly)
  for _ in $(seq 3000); do grep -q listening "$1" 2>/dev/null && break; sleep 0.01; done
  grep -o '127\.0\.0\.1:[0-9]*' "$1" | head -n1 | grep . || { echo "loadtest: nothing listening after 30 s: $1: $(head -c 500 "$1")" >&2; return 1; }
}

rss_peak=0
sample_rss() { local kb; kb=$(awk '/VmRSS/ {print $2}' /proc/"$mcs_pid"/status); (( kb > rss_peak )) && rss_peak=$kb; true; }

# profile saves a CPU profile and a trace of mcs during one more run.
profile() { # pools spec url accept ua
  [ -n "$PROFILE" ] || return 0
  local base="$PROFILE/$1-pools-$2"
  ( sleep 0.5; curl -sf "http://$pprof/debug/pprof/profile?seconds=2" -o "$base.cpu.pprof";
    curl -sf "http://$pprof/debug/pprof/trace?seconds=1" -o "$base.trace" ) &
  measure "$3" "$4" "$5" "$mcs_pid" >"$base.wrk"
  wait $!
}

run_pools() { # pools
  local n=$1 tree=$DIR
  if (( n > 2 )); then
    tree=$tmp/tree-$n; go run ./cmd/dev/scale -tree "$DIR" -n $((n - 2)) -write "$tree"
  fi
  local start; start=$(date +%s%N)
  pprof=127.0.0.1:$(( 20000 + RANDOM % 20000 ))
  MCS_PPROF=$pprof "${on_server[@]}" "$MCS" --dir "$tree" --listen-plain 127.0.0.1:0 --listen-tls '' --log-level error >"$tmp/mcs.out" 2>"$tmp/mcs.err" &
  mcs_pid=$!; pids+=("$mcs_pid")
  local url; url=http://$(wait_listening "$tmp/mcs.out")
  until curl -sf "$url/readyz" >/dev/null; do sleep 0.005; kill -0 "$mcs_pid"; done
  local ready_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  # Every pool but master serves the worker's configs and more.
  curl -sSf "$url/status?format=json" |
    sed -n 's|^      "name": "\([^"]*\)",$|/config/\1|p' | grep -vx /config/master >"$tmp/paths"
  local npaths; npaths=$(wc -l <"$tmp/paths")
  rss_peak=0
  ( while sleep 0.5 && kill -0 "$mcs_pid" 2>/dev/null; do sample_rss; echo $rss_peak >"$tmp/rss"; done ) & local spid=$!; pids+=("$spid")
  for spec in $ERAS; do
    IFS='|' read -r accept ua <<<"${headers[$spec]}"
    local bodies=$tmp/bodies-$n-$spec; mkdir -p "$bodies"
    while read -r path; do
      curl -sSf -H "Accept: $accept" -A "$ua" -D "$bodies/${path#/config/}.headers" "$url$path" -o "$bodies/${path#/config/}"
    done <"$tmp/paths"
    "${on_server[@]}" "$tmp/baseline" --dir "$bodies" >"$tmp/base.out" 2>&1 &
    local bpid=$!; pids+=("$bpid")
    local burl; burl=http://$(wait_listening "$tmp/base.out")
    local served; served=$(awk -F'[=;\r]' 'tolower($1) ~ /^content-type/ {print $3; exit}' "$bodies/worker.headers")
    # Alternate mcs and baseline REPS times and take medians: on two cores
    # shared with wrk, single runs of either vary by tens of percent.
    : >"$tmp/m"; : >"$tmp/b"
    for _ in $(seq "$REPS"); do
      measure "$url" "$accept" "$ua" "$mcs_pid" >>"$tmp/m"
      measure "$burl" "$accept" "$ua" "$bpid" >>"$tmp/b"
    done
    profile "$n" "$spec" "$url" "$accept" "$ua"
    kill "$bpid" 2>/dev/null || true
    read -r m_rps m_p50 m_p99 m_cpu < <(median "$tmp/m")
    read -r b_rps b_p50 b_p99 b_cpu < <(median "$tmp/b")
    awk -v n="$n" -v s="${ua#Ignition/} asks $spec" -v sv="$served" -v bytes="$(wc -c <"$bodies/worker")" \
      -v mr="$m_rps" -v br="$b_rps" -v m50="$m_p50" -v b50="$b_p50" -v m99="$m_p99" -v b99="$b_p99" -v mc="$m_cpu" -v bc="$b_cpu" \
      -v load="$(cut -d' ' -f1 /proc/loadavg)" \
      'BEGIN { printf "| %d | %s | %s | %d | %.0f / %.0f | **%.2f** | %.2f / %.2f | %.2f / %.2f | **%.2f** | %.0f / %.0f | %.2f | %s |\n", n, s, sv, bytes, mr, br, mr/br, m50, b50, m99, b99, m99/b99, mc, bc, mc/bc, load }'
  done
  kill $spid 2>/dev/null || true
  local rss_kb; rss_kb=$(cat "$tmp/rss" 2>/dev/null || echo 0)
  echo "| $n | ready in ${ready_ms} ms, peak RSS under load $(( rss_kb / 1024 )) MiB, $npaths paths cycled |"
  kill "$mcs_pid" 2>/dev/null || true
  wait "$mcs_pid" 2>/dev/null || true
}

{
trap cleanup EXIT # the block is a subshell: what it starts is stopped when it fails, too
echo "| pools | client | spec served | worker bytes | req/s mcs / bare | ratio | p50 ms mcs / bare | p99 ms mcs / bare | p99 ratio | CPU µs/request mcs / bare | ratio | load |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in $POOLS; do run_pools "$n"; done
echo
echo "wrk: $THREADS threads, $CONNS connections, $DURATION per run, median of $REPS alternating runs${PIN:+, servers on CPUs $PIN_SERVER and wrk on $PIN_WRK}; load average at the end $(cut -d' ' -f1-3 /proc/loadavg); machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go version | awk '{print $3}')"
} | if [ -n "$OUT" ]; then tee "$OUT"; else cat; fi
