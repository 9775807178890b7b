#!/usr/bin/env bash
# No merge-conflict markers in the tree's pages and sources: a merge resolved by hand once
# left `<<<<<<< HEAD ... >>>>>>> h/t45tied` in docs/auto_parallel.md for three sessions
# (found in session 48), where a reader saw both sides of the conflict as the page's text.
# Markdown's setext underline (a line of `=`) is not a marker, so only the two ends are
# looked for: 7 `<` or `>` at the start of a line, then a space or the line's end.
#
#   $1  this repository's WORKSPACE (the runfile links into the source tree)
set -euo pipefail
ROOT="$(dirname "$(readlink -f "$1")")"
[[ -f "$ROOT/README.md" && -d "$ROOT/docs" ]] || { echo "FAIL: no repository at $ROOT" >&2; exit 1; }
cd "$ROOT"
files=()
while IFS= read -r file; do files+=("$file"); done < <(
  find README.md docs actors bench compiler examples kernels oneflow_core plan proto sbp tests tools \
    -type f \( -name '*.md' -o -name '*.cc' -o -name '*.h' -o -name '*.proto' -o -name '*.sh' -o -name '*.py' \
    -o -name '*.js' -o -name 'BUILD.bazel' \) | sort)
[[ ${#files[@]} -gt 100 ]] || { echo "FAIL: found only ${#files[@]} files under $ROOT" >&2; exit 1; }
offenders="$(grep -nE '^(<<<<<<<|>>>>>>>)( |$)' "${files[@]}" || true)"
if [[ -n "$offenders" ]]; then
  echo "FAIL: merge-conflict markers (resolve the conflict: keep what is true of the code, drop the markers):" >&2
  echo "$offenders" >&2
  exit 1
fi
echo "PASS: ${#files[@]} files, no merge-conflict markers"
