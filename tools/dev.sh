#!/usr/bin/env bash
# Developer entry point: install what is missing, build, test, run the demo.
#
#   tools/dev.sh deps    install missing Debian packages (idempotent; no-op when present)
#   tools/dev.sh build   deps + bazel build //...
#   tools/dev.sh test    deps + test-only packages (chromium) + bazel test //..., ending with
#                        "N passed, N failed"
#   tools/dev.sh demo    deps + build + run the main example end to end (a GPT compiled
#                        for 4 CPU devices, dp=2 x tp=2, inspected and trained; a small
#                        GPT learning a license text; then the dp x tp GPT as 2 nodes
#                        through two local oneflowd daemons)
#
# Runs as root on a fresh Debian 12 machine (or as a user with sudo). Nothing is
# downloaded at build time: every dependency is a Debian package listed below.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Everything the build needs. g++ and the test/benchmark libraries are usually on the
# image already; listing them keeps a bare Debian machine working too.
PACKAGES=(
  bazel-bootstrap
  g++
  libabsl-dev
  libbenchmark-dev
  libdnnl-dev
  libgflags-dev
  libgloo-dev
  libgmock-dev
  libgoogle-glog-dev
  libgrpc++-dev
  libgtest-dev
  libopenblas-dev
  libopenmpi-dev
  libprotobuf-dev
  libucx-dev
  openmpi-bin
  openssl
  protobuf-compiler
  protobuf-compiler-grpc
  zlib1g-dev
)

# Packages only some tests need; those tests skip with a message where one is missing, so
# `test` goes on (with a warning) when they cannot be installed, e.g. offline.
#   chromium: the HTML plan viewer in a headless browser (tools/cli/inspect_html_browser_test.sh)
TEST_PACKAGES=(
  chromium
)

BAZEL_FLAGS=(--color=no --curses=no)

log() { echo "dev.sh: $*" >&2; }

usage() {
  sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# Prints the packages of "$@" that dpkg does not report as installed.
missing_packages() {
  local package
  for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      echo "$package"
    fi
  done
}

ensure_deps() {
  local missing
  missing="$(missing_packages "${PACKAGES[@]}")"
  if [[ -z "$missing" ]]; then
    log "all ${#PACKAGES[@]} packages present"
    return 0
  fi
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then sudo=(sudo); fi
  # shellcheck disable=SC2086  # one package name per word
  log "installing:" $missing
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  # shellcheck disable=SC2086
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends $missing
}

# What the tests that would otherwise skip may rely on here, as the value of
# --test_env=ONEFLOW_REQUIRE_TEST_DEPS: "chromium" once it is installed, "netns" as root
# with iproute2. Those tests then fail instead of skipping (no silent passes, issue 29).
required_test_deps() {
  local deps=()
  [[ -z "$(missing_packages "${TEST_PACKAGES[@]}")" ]] && deps+=(chromium)
  [[ "$(id -u)" == 0 ]] && command -v ip >/dev/null && deps+=(netns)
  local IFS=,
  echo "${deps[*]}"
}

ensure_test_deps() {
  local missing
  missing="$(missing_packages "${TEST_PACKAGES[@]}")"
  [[ -z "$missing" ]] && return 0
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then sudo=(sudo); fi
  # shellcheck disable=SC2086  # one package name per word
  log "installing for tests:" $missing
  # shellcheck disable=SC2086
  if ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
         "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
           apt-get install -y -q --no-install-recommends $missing; }; then
    # shellcheck disable=SC2086
    log "could not install" $missing "(offline?): the tests that need it will skip"
  fi
}

# Counts test results from Bazel's per-target summary lines and prints the line CI
# reads: "N passed, N failed". Incompatible (skipped) targets count as neither. A test
# that passed by skipping (its log, under the optional testlogs folder $2, has a line
# "SKIP: why") counts as neither too, and is listed on a line of its own.
summarize_tests() {
  local log_file="$1" testlogs="${2:-}" passed failed target skipped=()
  passed="$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log_file" || true)"
  failed="$(grep -cE '^//[^ ]+ +.*(FAILED|TIMEOUT|NO STATUS|INCOMPLETE|FLAKY)' "$log_file" || true)"
  if [[ -n "$testlogs" ]]; then
    while read -r target; do
      local test_log="$testlogs/${target#//}"
      test_log="${test_log/://}/test.log"
      if [[ -f "$test_log" ]] && grep -q '^SKIP: ' "$test_log"; then
        skipped+=("$target ($(grep -m1 '^SKIP: ' "$test_log" | cut -c7-))")
      fi
    done < <(grep -oE '^//[^ ]+ +(\(cached\) )?PASSED' "$log_file" | cut -d' ' -f1)
  fi
  echo "$((passed - ${#skipped[@]})) passed, ${failed} failed"
  if [[ ${#skipped[@]} -gt 0 ]]; then
    local IFS=';'
    echo "${#skipped[@]} skipped: ${skipped[*]}"
  fi
}

cmd_build() {
  ensure_deps
  cd "$ROOT"
  bazel build "${BAZEL_FLAGS[@]}" //...
}

cmd_test() {
  ensure_deps
  ensure_test_deps
  cd "$ROOT"
  local log_file rc=0
  log_file="$(mktemp)"
  bazel test "${BAZEL_FLAGS[@]}" --test_env=ONEFLOW_REQUIRE_TEST_DEPS="$(required_test_deps)" //... "$@" 2>&1 |
    tee "$log_file" || rc=$?
  # The layering rules (bazel query, so not a bazel test): counted like a test.
  if "$ROOT/tools/check_layering.sh" 2>&1 | tee -a "$log_file"; then
    echo "//tools:check_layering                                                   PASSED" | tee -a "$log_file"
  else
    echo "//tools:check_layering                                                   FAILED" | tee -a "$log_file"
    rc=1
  fi
  summarize_tests "$log_file" "$ROOT/bazel-testlogs"
  rm -f "$log_file"
  return "$rc"
}

cmd_demo() {
  ensure_deps
  cd "$ROOT"
  bazel build "${BAZEL_FLAGS[@]}" //examples/sbp_layout:sbp_layout //examples/gpt:gpt \
    //tools/cli:oneflow //tools/launcher:oneflowd //tools/worker:oneflow_worker
  local demo=bazel-bin/examples/sbp_layout/sbp_layout
  echo
  echo "== A [6, 5] variable on 2 nodes x 2 CPU devices, [S(0), S(1)] (2-D tensor parallel) =="
  "$demo" --shape='[6, 5]' --placement='cpu{0:0-1, 1:0-1}[2, 2]' --sbp='[S(0), S(1)]' \
    --print_values=false
  echo
  echo "== A GPT (2 blocks) compiled for 4 CPU devices, dp=2 x tp=2 (Megatron by SBP hints) =="
  local plan
  plan="$(mktemp -d)/gpt.plan"
  bazel-bin/examples/gpt/gpt --devices_per_node=4 --dp=2 --tp=2 --layers=2 \
    --hidden=256 --heads=8 --batch=8 --seq=32 --vocab=256 --lr=0.01 --plan_out="$plan"
  echo
  echo "== oneflow inspect $plan --device=0 (beginning and end) =="
  local text
  text="$(bazel-bin/tools/cli/oneflow inspect "$plan" --device=0)"
  head -n 20 <<<"$text" | cut -c1-160
  echo "  ..."
  tail -n 6 <<<"$text" | cut -c1-240
  echo
  echo "== oneflow run $plan --iters=40 (4 devices as threads of this process) =="
  bazel-bin/tools/cli/oneflow run "$plan" --iters=40 --trace="${plan%.plan}.trace.json"
  echo "(trace for ui.perfetto.dev: ${plan%.plan}.trace.json; the whole plan: bazel-bin/tools/cli/oneflow inspect $plan)"
  demo_text
  demo_cluster "$(dirname "$plan")"
}

# A small GPT learning real text: the bytes of a license every Debian machine has
# (base-files), next-byte prediction. tests/text_file_training_test.cc checks that this
# schedule gets below 3 bits per byte (2.08 nats).
demo_text() {
  local text=/usr/share/common-licenses/GPL-3
  [[ -f "$text" ]] || { log "skipping the text demo: $text is missing"; return 0; }
  echo
  echo "== A small GPT learning the bytes of $text (1 device, 700 iterations; loss in nats per byte, 3 bits = 2.08 nats) =="
  bazel-bin/examples/gpt/gpt --text_file="$text" --batch=16 --seq=64 --hidden=64 --heads=4 --layers=2 \
    --lr=3e-3 --run --iters=700 | awk -F'[:,]' '/"iter"/ { if ($2 % 100 == 0 || $2 == 699) print; next } { print }'
}

# The same GPT as 2 nodes x 2 devices, one worker process per node started by two local
# oneflowd daemons, through `oneflow launch` (docs/launcher.md).
demo_cluster() {
  local dir="$1" i
  local daemons=()
  # shellcheck disable=SC2317  # called by the trap
  stop_daemons() { [[ ${#daemons[@]} -gt 0 ]] && kill "${daemons[@]}" 2>/dev/null; wait 2>/dev/null || true; }
  trap stop_daemons EXIT
  head -c 32 /dev/urandom | base64 >"$dir/token"
  chmod 600 "$dir/token"
  for i in 0 1; do
    mkdir -p "$dir/daemon$i"
    bazel-bin/tools/launcher/oneflowd --listen=127.0.0.1:0 --token_file="$dir/token" \
      --work_dir="$dir/daemon$i" >"$dir/daemon$i.out" 2>"$dir/daemon$i.log" &
    daemons+=($!)
  done
  local nodes=() address
  for i in 0 1; do
    for _ in $(seq 100); do
      grep -q "listening on" "$dir/daemon$i.out" 2>/dev/null && break
      sleep 0.1
    done
    address="$(sed -n 's/^oneflowd listening on //p' "$dir/daemon$i.out")"
    [[ -n "$address" ]] || { log "daemon $i did not start: $(cat "$dir/daemon$i.log")"; return 1; }
    nodes+=("$address")
  done
  echo
  echo "== The GPT for 2 nodes x 2 devices (dp=2 across nodes x tp=2), launched on daemons ${nodes[0]} and ${nodes[1]} =="
  bazel-bin/examples/gpt/gpt --nodes=2 --devices_per_node=2 --dp=2 --tp=2 --layers=2 \
    --hidden=256 --heads=8 --batch=8 --seq=32 --vocab=256 --lr=0.01 --plan_out="$dir/gpt2.plan"
  echo "\$ oneflow launch --nodes=${nodes[0]},${nodes[1]} --token_file=$dir/token $dir/gpt2.plan --iters=20"
  bazel-bin/tools/cli/oneflow launch --nodes="${nodes[0]},${nodes[1]}" --token_file="$dir/token" \
    "$dir/gpt2.plan" --iters=20
  stop_daemons
  trap - EXIT
}

main() {
  local command="${1:-}"
  [[ $# -gt 0 ]] && shift
  case "$command" in
    deps) ensure_deps ;;
    build) cmd_build ;;
    test) cmd_test "$@" ;;
    demo) cmd_demo ;;
    help | -h | --help) usage ;;
    *)
      echo "dev.sh: unknown command '${command}'; valid: deps, build, test, demo, help" >&2
      usage >&2
      exit 2
      ;;
  esac
}

# Sourcing the script (as tests/dev_sh_test.sh does) defines the functions only.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
