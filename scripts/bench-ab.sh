#!/usr/bin/env bash
# A/B benchmark of two commits with one yardstick:
#
#   scripts/bench-ab.sh BASE_COMMIT [HEAD_COMMIT]      # HEAD_COMMIT defaults to HEAD
#
# Checks both commits out as detached git worktrees under a temp dir, links this checkout's
# node_modules into each and copies this checkout's CURRENT test/bench/*.ts over theirs, so both
# sides run the same bench code (and the same `bare` client) against their own src/ and
# test/support/. Then runs, ROUNDS times, the standalone bench base, head, then the cluster
# bench base, head (alternating, so drift on the machine hits both sides), each with the same
# environment, saving every run's output and BENCH_JSON in a results dir, and prints per cell
# redis-ha-pool's ops/s and its ratio to `bare` in every run, and the medians per side.
# The worktrees are removed at the end, also on failure or Ctrl-C.
#
# Environment (exported to both benches):
#   ROUNDS             rounds of base/head runs (default 3)
#   BENCH_OPS          ops per cell (default 50000)
#   BENCH_ONLY         clients (default ha,bare,ioredis-ap; ha and bare are needed for the summary)
#   BENCH_CONCURRENCY  in-flight counts (default 50,500; the cluster bench runs each too)
#   RESULTS_DIR        where to keep the outputs (default a new /tmp/bench-ab-results.XXXXXX)
#   RUN_TIMEOUT        seconds before one bench run is killed (default 1800)
#   BENCHES            which benches (default "standalone cluster")
#   INPROC_ROUNDS      its rounds (default 8)
#   INPROC             0 skips the last step: test/bench/inproc-ab.ts, both versions in ONE process
#                      against the same servers, interleaved (the steadier comparison)
#
# Run it on a quiet machine: ops/s move by 2x with other load on 2 cores; the per-run
# table shows how much they moved.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 BASE_COMMIT [HEAD_COMMIT]" >&2
  exit 2
fi

REPO=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
BASE_SHA=$(git -C "$REPO" rev-parse --verify "$1^{commit}")
HEAD_SHA=$(git -C "$REPO" rev-parse --verify "${2:-HEAD}^{commit}")
ROUNDS=${ROUNDS:-3}
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}
export BENCH_OPS=${BENCH_OPS:-50000}
export BENCH_ONLY=${BENCH_ONLY:-ha,bare,ioredis-ap}
export BENCH_CONCURRENCY=${BENCH_CONCURRENCY:-50,500}
TSX="$REPO/node_modules/.bin/tsx"
[[ -x $TSX ]] || { echo "$TSX missing: run npm ci in $REPO first" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-ab.XXXXXX")
RESULTS=${RESULTS_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/bench-ab-results.XXXXXX")}
mkdir -p "$RESULTS"

cleanup() {
  local side
  for side in base head; do
    if [[ -d $WORK/$side ]]; then git -C "$REPO" worktree remove --force "$WORK/$side" || true; fi
  done
  git -C "$REPO" worktree prune || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for side in base head; do
  sha=$BASE_SHA
  [[ $side == head ]] && sha=$HEAD_SHA
  git -C "$REPO" worktree add --quiet --detach "$WORK/$side" "$sha"
  ln -s "$REPO/node_modules" "$WORK/$side/node_modules"
  cp "$REPO"/test/bench/*.ts "$WORK/$side/test/bench/"
done

{
  echo "base $BASE_SHA ($(git -C "$REPO" log -1 --format=%s "$BASE_SHA" | cut -c1-80))"
  echo "head $HEAD_SHA ($(git -C "$REPO" log -1 --format=%s "$HEAD_SHA" | cut -c1-80))"
  echo "bench files: $REPO/test/bench/*.ts as of $(date -u +%FT%TZ) (HEAD $(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet -- test/bench || echo ', modified'))"
  echo "ROUNDS=$ROUNDS BENCH_OPS=$BENCH_OPS BENCH_ONLY=$BENCH_ONLY BENCH_CONCURRENCY=$BENCH_CONCURRENCY"
  echo "node $(node --version); $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
} | tee "$RESULTS/setup.txt" >&2
echo "results: $RESULTS" >&2

# One bench run: output and JSON in $RESULTS; a failure is recorded, the other runs go on.
run() {
  local bench=$1 side=$2 round=$3
  local name="$bench-$side-r$round"
  echo "[bench-ab] round $round/$ROUNDS: $bench $side" >&2
  local rc=0
  (cd "$WORK/$side" && BENCH_JSON="$RESULTS/$name.json" timeout --kill-after=10 "$RUN_TIMEOUT" "$TSX" "test/bench/$bench.ts") \
    >"$RESULTS/$name.txt" 2>&1 || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "[bench-ab] $name exited with $rc (see $RESULTS/$name.txt)" >&2
    echo "$rc" >"$RESULTS/$name.failed"
  fi
}

for ((round = 1; round <= ROUNDS; round++)); do
  for bench in ${BENCHES:-standalone cluster}; do
    # Odd rounds run base first, even rounds head first: the second run of a pair starts while
    # the first one's servers are still going away, so a fixed order would favour one side.
    if ((round % 2)); then
      run "$bench" base "$round"
      run "$bench" head "$round"
    else
      run "$bench" head "$round"
      run "$bench" base "$round"
    fi
  done
done

status=0
node --input-type=module - "$RESULTS" "$ROUNDS" <<'EOF' | tee "$RESULTS/summary.md" || status=$?
import { existsSync, readFileSync } from 'node:fs';
const [dir, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg);
const median = (xs) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const int = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
const fix = (n) => (Number.isFinite(n) ? n.toFixed(2) : '-');

/** cell key -> { base: [{ ha, bare }|undefined per round], head: [...] } */
const cells = new Map();
const problems = [];
const cell = (k) => cells.get(k) ?? cells.set(k, { base: [], head: [] }).get(k);
for (const bench of (process.env.BENCHES ?? 'standalone cluster').split(/\s+/).filter(Boolean)) {
  for (const side of ['base', 'head']) {
    for (let r = 1; r <= rounds; r++) {
      const name = `${bench}-${side}-r${r}`;
      if (existsSync(`${dir}/${name}.failed`)) problems.push(`${name}: exit ${readFileSync(`${dir}/${name}.failed`, 'utf8').trim()}`);
      if (!existsSync(`${dir}/${name}.json`)) {
        problems.push(`${name}: no results (see ${name}.txt)`);
        continue;
      }
      const j = JSON.parse(readFileSync(`${dir}/${name}.json`, 'utf8'));
      const put = (k, id, ops) => {
        const runs = cell(k)[side];
        runs[r - 1] ??= {};
        runs[r - 1][id] = ops;
      };
      if (bench === 'standalone') {
        for (const row of j.rows) if ((row.id === 'ha' || row.id === 'bare') && row.transport === 'tcp') put(`standalone ${row.op} ${row.inFlight}`, row.id, row.s.opsPerSec);
      } else {
        for (const row of j.rows) if (row.id === 'ha' || row.id === 'bare') for (const { concurrency, s } of row.sets) put(`cluster SET ${concurrency}`, row.id, s.opsPerSec);
      }
    }
  }
}

const lines = ['', '## bench-ab summary: redis-ha-pool ops/s (÷ bare in the same run)', ''];
const runCols = Array.from({ length: rounds }, (_, i) => `run ${i + 1}`);
const table = [['cell', 'side', ...runCols, 'median ha ops/s', 'median ha/bare']];
const compare = [['cell', 'ha ops/s base', 'ha ops/s head', 'head/base', 'ha/bare base', 'ha/bare head', 'head/base']];
for (const [k, sides] of cells) {
  const med = {};
  for (const side of ['base', 'head']) {
    const runs = Array.from({ length: rounds }, (_, i) => sides[side][i]);
    const ha = runs.map((x) => x?.ha ?? NaN);
    const ratio = runs.map((x) => (x?.ha ?? NaN) / (x?.bare ?? NaN));
    med[side] = { ha: median(ha), ratio: median(ratio) };
    table.push([k, side, ...runs.map((_, i) => `${int(ha[i])} (${fix(ratio[i])})`), int(med[side].ha), fix(med[side].ratio)]);
  }
  compare.push([k, int(med.base.ha), int(med.head.ha), fix(med.head.ha / med.base.ha), fix(med.base.ratio), fix(med.head.ratio), fix(med.head.ratio / med.base.ratio)]);
}
/** A markdown table whose first `left` columns are text. */
const md = (rows, left) => {
  const w = rows[0].map((_, c) => Math.max(3, ...rows.map((r) => r[c].length)));
  const line = (r) => '| ' + r.map((s, c) => (c < left ? s.padEnd(w[c]) : s.padStart(w[c]))).join(' | ') + ' |';
  return [line(rows[0]), '| ' + w.map((n, c) => (c < left ? '-'.repeat(n) : '-'.repeat(n - 1) + ':')).join(' | ') + ' |', ...rows.slice(1).map(line)].join('\n');
};
lines.push(md(table, 2), '', 'Medians per side; head/base > 1 = head faster. In each run, ha and bare ran in the same process seconds apart, so ha/bare compares them under the same machine load.', '', md(compare, 1));
if (problems.length) lines.push('', 'PROBLEMS:', ...problems.map((p) => `- ${p}`));
console.log(lines.join('\n'));
if (problems.length) process.exitCode = 1;
EOF
if [[ ${INPROC:-1} != 0 ]]; then
  # The steadier comparison: both versions in one process, against the same servers, interleaved.
  echo "[bench-ab] in one process: base and head interleaved (test/bench/inproc-ab.ts)" >&2
  if ! (cd "$REPO" && BASE_SRC="$WORK/base/src" HEAD_SRC="$WORK/head/src" timeout --kill-after=10 "$RUN_TIMEOUT" "$TSX" test/bench/inproc-ab.ts) \
    >"$RESULTS/inproc-ab.txt" 2>"$RESULTS/inproc-ab.err"; then
    echo "[bench-ab] inproc-ab failed (see $RESULTS/inproc-ab.err)" >&2
    status=1
  fi
  cat "$RESULTS/inproc-ab.txt"
fi
echo "results: $RESULTS" >&2
exit "$status"
