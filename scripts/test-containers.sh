#!/usr/bin/env bash
# npm run test:containers [-- <test files>]
#
# Runs integration tests with REDIS_TOPOLOGY=containers: every Redis node a container.
# Without DOCKER_HOST it starts a Docker engine of its own (Debian's docker.io, installed
# with apt-get when missing and running as root) with its own data root, exec root, socket
# and pid file, no iptables rules and no bridge (the containers use the host network), and
# stops it by PID when it exits, whatever happens. With DOCKER_HOST set it uses that engine
# (it must run on this machine: the containers share its loopback) and starts nothing.
#
# The image is built from this machine's own Redis binaries (nothing is pulled); see
# test/support/container-image.ts. Default test files: DEFAULT_FILES below.
set -euo pipefail
cd "$(dirname "$0")/.."

DEFAULT_FILES=(
  test/integration/topology.test.ts
  test/integration/standalone.test.ts
  test/integration/sentinel.test.ts
  test/integration/sentinel-faults.test.ts
  test/integration/cluster.test.ts
  test/integration/cluster-faults.test.ts
)
files=("$@")
[ "${#files[@]}" -gt 0 ] || files=("${DEFAULT_FILES[@]}")

say() { echo "test:containers: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
t_all=$(now)

run_dir=""
dockerd_pid=""

stop_engine() {
  local status=$?
  if [ -n "$dockerd_pid" ] && kill -0 "$dockerd_pid" 2>/dev/null; then
    say "stopping dockerd (pid $dockerd_pid)"
    # SIGTERM: dockerd stops its containers and its containerd, and unmounts its layers.
    kill -TERM "$dockerd_pid" 2>/dev/null || true
    for _ in $(seq 1 150); do
      kill -0 "$dockerd_pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$dockerd_pid" 2>/dev/null; then
      say "dockerd (pid $dockerd_pid) still running after 30 s: SIGKILL"
      kill -KILL "$dockerd_pid" 2>/dev/null || true
    fi
  fi
  if [ -n "$run_dir" ] && [ -d "$run_dir" ]; then
    if [ "$status" != 0 ] && [ -f "$run_dir/dockerd.log" ]; then
      say "last lines of the dockerd log:"
      tail -n 20 "$run_dir/dockerd.log" >&2 || true
    fi
    # dockerd leaves its network namespace file (exec/netns/default) mounted: unmount what is
    # mounted below this run's own directory, deepest first, then remove the directory.
    if [ -z "$dockerd_pid" ] || ! kill -0 "$dockerd_pid" 2>/dev/null; then
      awk -v d="$run_dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
      done
    fi
    if grep -q " ${run_dir}/" /proc/mounts 2>/dev/null; then
      say "leaving $run_dir: something is still mounted below it"
    else
      rm -rf "$run_dir"
    fi
  fi
  say "total $(since "$t_all")"
  exit "$status"
}

start_engine() {
  if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ]; then
      say "installing docker.io with apt-get (dockerd and the docker CLI are missing)"
      local t=$(now)
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq
      apt-get install -y -qq docker.io >/dev/null
      say "docker.io installed in $(since "$t")"
    else
      say "dockerd is missing: install Docker (Debian/Ubuntu: apt-get install docker.io) or set DOCKER_HOST to a running engine on this machine"
      exit 1
    fi
  fi
  if [ "$(id -u)" != 0 ]; then
    say "starting a Docker engine needs root; run as root or set DOCKER_HOST to a running engine on this machine"
    exit 1
  fi
  # Short path: the engine's unix sockets live below it (108-byte limit).
  run_dir=$(mktemp -d /tmp/redis-ha-pool-dockerd.XXXXXX)
  local t=$(now)
  dockerd \
    --data-root "$run_dir/data" \
    --exec-root "$run_dir/exec" \
    --pidfile "$run_dir/dockerd.pid" \
    -H "unix://$run_dir/docker.sock" \
    --iptables=false --ip-forward=false --ip-masq=false --bridge=none \
    --containerd-namespace redis-ha-pool --containerd-plugins-namespace redis-ha-pool-plugins \
    >"$run_dir/dockerd.log" 2>&1 &
  dockerd_pid=$!
  echo "$dockerd_pid" >"$run_dir/started.pid"
  export DOCKER_HOST="unix://$run_dir/docker.sock"
  say "started dockerd (pid $dockerd_pid, DOCKER_HOST=$DOCKER_HOST)"
  for _ in $(seq 1 300); do
    if ! kill -0 "$dockerd_pid" 2>/dev/null; then
      say "dockerd exited during start-up"
      exit 1
    fi
    docker version >/dev/null 2>&1 && break
    sleep 0.2
  done
  docker version >/dev/null 2>&1 || { say "dockerd did not answer within 60 s"; exit 1; }
  say "engine $(docker version --format '{{.Server.Version}}') ready in $(since "$t")"
}

trap stop_engine EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -n "${DOCKER_HOST:-}" ]; then
  say "using the engine at DOCKER_HOST=$DOCKER_HOST (not starting one)"
else
  start_engine
fi

export REDIS_TOPOLOGY=containers
export TESTCONTAINERS_RYUK_DISABLED="${TESTCONTAINERS_RYUK_DISABLED:-true}"
export TESTCONTAINERS_HOST_OVERRIDE="${TESTCONTAINERS_HOST_OVERRIDE:-127.0.0.1}"

t=$(now)
image=$(npx tsx test/support/container-backend.ts)
say "image $image built in $(since "$t")"

t=$(now)
status=0
npx vitest run "${files[@]}" || status=$?
say "tests (${#files[@]} files) took $(since "$t")"
exit "$status"
