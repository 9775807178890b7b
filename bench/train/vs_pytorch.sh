#!/usr/bin/env bash
# Our training step next to PyTorch's on the same model, threads and data, one JSON line
# per case with the ratio ours / PyTorch (docs/benchmarks.md, "vs_pytorch").
#
#   bench/train/vs_pytorch.sh                 every case (~5 minutes on 2 cores, after the build)
#   bench/train/vs_pytorch.sh --cases=mlp_1,gpt_1 --iters=40 --warmup=10
#   bench/train/vs_pytorch.sh --trace_dir=/tmp/traces   also write our Perfetto traces
#   bench/train/vs_pytorch.sh deps            only install PyTorch (if missing)
#
# PyTorch is the benchmark's peer, not a build dependency: Debian's python3-torch is
# installed here (as root, or through sudo) when /usr/bin/python3 cannot import torch.
# Then our -c opt binaries are built, and bench/train/vs_pytorch.py runs every case,
# ours and PyTorch's one after the other (never at the same time: the machine has few
# cores and both sides get one thread per rank).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON=/usr/bin/python3
TARGETS=(//examples/mlp //examples/gpt //examples/llama //tools/cli:oneflow //bench/train:plan_summary //bench/gemm:fma_peak)

log() { echo "vs_pytorch.sh: $*" >&2; }

ensure_torch() {
  if "$PYTHON" -c 'import torch' 2>/dev/null; then
    log "PyTorch present: $("$PYTHON" -c 'import torch; print(torch.__version__)')"
    return 0
  fi
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then sudo=(sudo); fi
  log "$PYTHON cannot import torch: installing Debian's python3-torch"
  log "\$ ${sudo[*]} apt-get update -q && ${sudo[*]} apt-get install -y -q --no-install-recommends python3-torch"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends python3-torch
  log "installed PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)')"
}

build() {
  log "building (-c opt): ${TARGETS[*]}"
  (cd "$ROOT" && bazel build -c opt --symlink_prefix=/ --color=no --curses=no "${TARGETS[@]}")
}

main() {
  if [[ "${1:-}" == deps ]]; then
    ensure_torch
    return 0
  fi
  ensure_torch
  build
  cd "$ROOT"
  # bazel-out/k8-opt, not bazel-bin: the bazel-bin link follows whichever configuration
  # built last, and other builds may run beside this one.
  exec "$PYTHON" "$ROOT/bench/train/vs_pytorch.py" --bin_dir="$ROOT/bazel-out/k8-opt/bin" "$@"
}

main "$@"
