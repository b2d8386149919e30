#!/usr/bin/env bash
# swemint on a real (single-node) Ray cluster: start a head bound to loopback with token auth,
# `ray job submit` the chain job (pipeline.jobs.run) (configs/cluster.yaml: the demo input), check the dataset landed
# under WORKDIR, stop the head by its pid.
#
#   bash scripts/cluster_demo.sh [--workdir DIR] [--registry] [--config FILE] [--remove-images] [-- JOB ARGS...]
#   bash scripts/cluster_demo.sh --nodes N [--workdir DIR] [--config FILE] [--seed-images] [--keep] [--keep-images]
#                                [-- JOB ARGS...]
#   bash scripts/cluster_demo.sh -h | --help [--nodes N]   this help (with --nodes: localcluster.py's options too)
#
#   --nodes N         N Ray nodes (a head and N-1 workers) on this host, each with a Docker engine of
#                     its own, a registry with credentials between them: scripts/localcluster.py (its
#                     docstring says what runs where); the other options are passed to it
#   --workdir DIR     where the job writes (absolute; default: a new temp dir)
#   --registry        also run Debian's docker-registry on 127.0.0.1 (installed with apt-get when
#                     missing) and pass `--set registry=127.0.0.1:PORT`: verified images are pushed
#                     there and the pool records their location
#   --config FILE     job config (default configs/cluster.yaml)
#   --remove-images   remove the job's images afterwards (label swemint.run of the job's run id)
#   -- JOB ARGS       extra arguments for `python -m pipeline.jobs.run` (e.g. --set workers=1)
#
# The dataset's rows name their images where the job left them: with --registry (and always
# with --nodes) in the demo's own registry (127.0.0.1:PORT/...@sha256:...), which stops with the
# demo. `swemint eval -w WORKDIR` afterwards grades only images this host's engine holds: with
# --nodes pass --keep-images (pulls the verified rows' images here before the teardown); with
# --registry alone the images stay on this engine under their local tags unless --remove-images.
#
# The job commits its images as $SWEMINT_IMAGE_REPOSITORY (default swemint/cluster-demo), not the
# shared swemint/env, so the demo never replaces another run's images on a shared engine.
#
# Everything the script starts lives under one temp dir ($SWEMINT_CLUSTER_TMP or mktemp): Ray's
# --temp-dir, the auth token, logs, the registry's storage. Ports are picked free on 127.0.0.1
# (the dashboard prefers 8265). Env for every Ray process (see the platform notes):
#   RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH=<tmp>/auth_token   the job API runs code: token auth on
#   RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0                         every Ray socket on 127.0.0.1
#   RAY_USAGE_STATS_ENABLED=0
#   RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=0 (unless set)           SIGTERM stops the head at once
# The head runs as `ray start --head --block` in its own session: its pid (and the pids of the
# process group, recorded in <tmp>/head.pids) is what gets stopped; `ray stop` is never used.
# Prints `dataset: N rows (V verified) in WORKDIR/dataset/all.parquet` and exits 0 on success.
set -euo pipefail
usage() {  # the header comment above (line 2 up to `set -euo pipefail`), without the '# '
  sed -n '2,/^set -euo pipefail/{/^set -euo pipefail/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
nodes=0
for arg in "$@"; do
  [ "$arg" = "--" ] && break
  [ "$arg" = "--nodes" ] && nodes=1
done
for arg in "$@"; do
  [ "$arg" = "--" ] && break
  if [ "$arg" = "-h" ] || [ "$arg" = "--help" ]; then
    usage
    if [ $nodes = 1 ]; then echo; echo "With --nodes, scripts/localcluster.py demo takes these options:"; \
      exec .venv/bin/python scripts/localcluster.py demo --help; fi
    exit 0
  fi
done
if [ $nodes = 1 ]; then exec .venv/bin/python scripts/localcluster.py demo "$@"; fi
REPO=$PWD
VENV=$REPO/.venv/bin
CONFIG=configs/cluster.yaml
WORKDIR=""
REGISTRY=0
REMOVE_IMAGES=0
JOB_ARGS=(--set "mint.image_repository=${SWEMINT_IMAGE_REPOSITORY:-swemint/cluster-demo}")
while [ $# -gt 0 ]; do
  case $1 in
    --workdir) WORKDIR=$2; shift 2 ;;
    --registry) REGISTRY=1; shift ;;
    --config) CONFIG=$2; shift 2 ;;
    --remove-images) REMOVE_IMAGES=1; shift ;;
    --) shift; JOB_ARGS+=("$@"); break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

TMP=${SWEMINT_CLUSTER_TMP:-$(mktemp -d /tmp/swemint-cluster.XXXXXX)}
mkdir -p "$TMP"
WORKDIR=$(realpath -m "${WORKDIR:-$TMP/work}")
HEAD_PID="" REG_PID=""

log() { echo "[cluster_demo] $*" >&2; }

stop_pid_group() {  # stop_pid_group PID PIDFILE: SIGTERM the pid, wait, then SIGKILL recorded pids still alive
  local pid=$1 pidfile=$2 waited=0
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null && [ $waited -lt 30 ]; do sleep 1; waited=$((waited + 1)); done
  local left=()
  if [ -f "$pidfile" ]; then
    # the recorded pids plus anything now in the process group (pgid == pid, thanks to setsid)
    for p in $(cat "$pidfile") $(ps -eo pid=,pgid= | awk -v g="$pid" '$2 == g {print $1}'); do
      kill -0 "$p" 2>/dev/null && left+=("$p")
    done
  fi
  if [ ${#left[@]} -gt 0 ]; then
    sleep 3
    for p in "${left[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  fi
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  if [ -n "$HEAD_PID" ]; then
    ps -eo pid=,pgid= | awk -v g="$HEAD_PID" '$2 == g {print $1}' >> "$TMP/head.pids" || true
    log "stopping the Ray head (pid $HEAD_PID, $(sort -u "$TMP/head.pids" | wc -l) recorded pids)"
    stop_pid_group "$HEAD_PID" "$TMP/head.pids"
  fi
  if [ -n "$REG_PID" ]; then
    log "stopping docker-registry (pid $REG_PID)"
    echo "$REG_PID" > "$TMP/registry.pids"
    stop_pid_group "$REG_PID" "$TMP/registry.pids"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

read -r GCS_PORT DASH_PORT AGENT_PORT AGENT_GRPC ENV_AGENT CLIENT_PORT METRICS_PORT REG_PORT < <(
  "$VENV/python" - <<'EOF'
import socket
def free(preferred=0):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", preferred))
    except OSError:
        s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
ports = [free(), free(8265)] + [free() for _ in range(6)]
assert len(set(ports)) == len(ports), ports
print(*ports)
EOF
)

"$VENV/python" -c 'import secrets; print(secrets.token_hex(32))' > "$TMP/auth_token"
chmod 600 "$TMP/auth_token"
export RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH=$TMP/auth_token
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_USAGE_STATS_ENABLED=0
# the head stops at once on SIGTERM: no drain of up to 30 s first (nothing here needs draining)
export RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=${RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S:-0}
export PATH=$VENV:$PATH   # the job's `python` is the venv's
ADDRESS=http://127.0.0.1:$DASH_PORT

log "starting a Ray head on 127.0.0.1 (dashboard $ADDRESS, temp dir $TMP/ray, token auth)"
setsid "$VENV/ray" start --head --block --num-cpus "${SWEMINT_CLUSTER_CPUS:-3}" \
  --resources "{\"docker\": ${SWEMINT_CLUSTER_SLOTS:-2}}" \
  --node-ip-address 127.0.0.1 --port "$GCS_PORT" \
  --dashboard-host 127.0.0.1 --dashboard-port "$DASH_PORT" \
  --dashboard-agent-listen-port "$AGENT_PORT" --dashboard-agent-grpc-port "$AGENT_GRPC" \
  --runtime-env-agent-port "$ENV_AGENT" --ray-client-server-port "$CLIENT_PORT" \
  --metrics-export-port "$METRICS_PORT" \
  --temp-dir "$TMP/ray" --disable-usage-stats > "$TMP/head.log" 2>&1 &
HEAD_PID=$!
echo "$HEAD_PID" > "$TMP/head.pid"
for _ in $(seq 120); do
  if curl -sf -H "Authorization: Bearer $(cat "$TMP/auth_token")" "$ADDRESS/api/version" > /dev/null; then break; fi
  kill -0 "$HEAD_PID" 2>/dev/null || { log "the head died:"; tail -20 "$TMP/head.log" >&2; exit 1; }
  sleep 1
done
ps -eo pid=,pgid= | awk -v g="$HEAD_PID" '$2 == g {print $1}' > "$TMP/head.pids"
log "head up: pid $HEAD_PID, $(wc -l < "$TMP/head.pids") processes (pids in $TMP/head.pids)"
"$VENV/python" -c 'import sys; from pipeline.raysec import assert_loopback_only; assert_loopback_only(int(sys.argv[1]))' "$HEAD_PID" \
  || { log "the Ray head listens beyond loopback: stopping"; exit 1; }
log "every socket of the head's processes is on loopback"
log "job API without the token answers HTTP $(curl -s -o /dev/null -w '%{http_code}' "$ADDRESS/api/jobs/")"

if [ "$REGISTRY" = 1 ]; then
  if ! command -v docker-registry > /dev/null; then
    log "installing Debian's docker-registry"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-registry > "$TMP/apt.log" 2>&1
  fi
  mkdir -p "$TMP/registry"
  cat > "$TMP/registry.yml" <<EOF
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $TMP/registry}
  delete: {enabled: true}
http:
  addr: 127.0.0.1:$REG_PORT
  secret: $(cat /proc/sys/kernel/random/uuid)
EOF
  setsid docker-registry serve "$TMP/registry.yml" > "$TMP/registry.log" 2>&1 &
  REG_PID=$!
  for _ in $(seq 30); do curl -sf "http://127.0.0.1:$REG_PORT/v2/" > /dev/null && break; sleep 0.5; done
  curl -sf "http://127.0.0.1:$REG_PORT/v2/" > /dev/null || { log "docker-registry did not come up"; exit 1; }
  log "docker-registry on 127.0.0.1:$REG_PORT (pid $REG_PID)"
  JOB_ARGS+=(--set "registry=127.0.0.1:$REG_PORT")
fi

log "submitting the job (workdir $WORKDIR)"
t0=$(date +%s)
# the dashboard answers before the job agent is up ("No available agent to submit job"): retry
for attempt in 1 2 3 4 5 6; do
  if ray job submit --address "$ADDRESS" --working-dir . \
      --runtime-env-json '{"excludes": [".git/", ".venv/", ".mypy_cache/", ".ruff_cache/", ".pytest_cache/", "work/"]}' \
      -- python -m pipeline.jobs.run --config "$CONFIG" --workdir "$WORKDIR" "${JOB_ARGS[@]}" 2>&1 | tee "$TMP/job.log"; then
    break
  fi
  grep -q "No available agent" "$TMP/job.log" && [ "$attempt" -lt 6 ] || exit 1
  log "the job agent is not up yet (attempt $attempt): retrying in 5 s"
  sleep 5
done
log "job finished in $(( $(date +%s) - t0 )) s"

curl -s "http://127.0.0.1:$METRICS_PORT/metrics" | grep '^ray_swemint' > "$TMP/metrics.txt" || true
log "Ray metrics (ray_swemint_*) on 127.0.0.1:$METRICS_PORT: $(wc -l < "$TMP/metrics.txt") series, in $TMP/metrics.txt"

"$VENV/python" - "$WORKDIR" "$REGISTRY" "$REG_PORT" <<'EOF'
import json, sys, urllib.request
from pathlib import Path
import duckdb, pandas as pd
workdir, registry, port = Path(sys.argv[1]), sys.argv[2] == "1", sys.argv[3]
path = workdir / "dataset" / "all.parquet"
if not path.is_file():
    sys.exit(f"no dataset at {path}")
df = pd.read_parquet(path)
print(f"dataset: {len(df)} rows ({int((df.outcome == 'verified').sum())} verified) in {path}")
with duckdb.connect(str(workdir / "pool.duckdb"), read_only=True) as con:
    rows = con.execute("SELECT instance_id, location FROM environments ORDER BY instance_id").fetchall()
for iid, loc in rows:
    print(f"pool: {iid} at {loc}")
if registry:
    catalog = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/_catalog"))
    print(f"registry catalog: {catalog['repositories']}")
    bad = [iid for iid, loc in rows if not loc.startswith(f"127.0.0.1:{port}/") or "@sha256:" not in loc]
    if bad:
        sys.exit(f"pool rows without a registry location: {bad}")
if len(df) == 0:
    sys.exit("the dataset is empty")
EOF

if [ "$REMOVE_IMAGES" = 1 ]; then
  "$VENV/python" - "$WORKDIR" <<'EOF'
import sys
from pathlib import Path
from envpool.docker_sandbox import docker_client
from pipeline.pipeline_config import run_id_for
client, rid = docker_client(), run_id_for(Path(sys.argv[1]))
gone = 0
for img in client.images.list(all=True, filters={"label": f"swemint.run={rid}"}):
    try:
        client.images.remove(img.id, force=True); gone += 1
    except Exception:
        pass
print(f"removed {gone} image(s) of run {rid}")
EOF
fi
