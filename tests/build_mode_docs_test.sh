#!/usr/bin/env bash
# One build mode for the docs (issue 30): every bazel command in README.md, docs/*.md,
# tools/dev.sh and the bench scripts builds in the default mode (the repository's
# .bazelrc already compiles with -O2), so following the docs never re-points bazel-bin
# away from binaries an earlier step built. A command that builds in another mode
# (`-c opt`, `--compilation_mode=...`) must keep the tree's links as they are:
# `--symlink_prefix=/` (no links) or its own `--symlink_prefix=DIR/bazel-`.
#
#   $1  this repository's WORKSPACE (the runfile links into the source tree)
set -euo pipefail
ROOT="$(dirname "$(readlink -f "$1")")"
[[ -f "$ROOT/README.md" && -d "$ROOT/docs" ]] || { echo "FAIL: no repository at $ROOT" >&2; exit 1; }
cd "$ROOT"
files=(README.md docs/*.md tools/dev.sh)
while IFS= read -r script; do files+=("$script"); done < <(find bench -name '*.sh' | sort)
[[ ${#files[@]} -gt 20 ]] || { echo "FAIL: found only ${files[*]}" >&2; exit 1; }
# file:line:text of each bazel build/run/test line in a mode other than the default.
offenders="$(grep -nE 'bazel +(build|run|test)\b.*( -c +[a-z]+| --compilation_mode)' "${files[@]}" |
  grep -v -- '--symlink_prefix' || true)"
if [[ -n "$offenders" ]]; then
  echo "FAIL: these commands build in another mode than the docs' default and re-point bazel-bin;" >&2
  echo "drop the -c (the .bazelrc compiles with -O2) or add --symlink_prefix=/ :" >&2
  echo "$offenders" >&2
  exit 1
fi
echo "PASS: ${#files[@]} files, every bazel command in the default mode or with its own symlinks"
