#!/usr/bin/env bash
# `oneflow inspect --format=html` in a real browser: writes the page of a dp2 x tp2 gpt
# plan, loads it from disk in headless Chromium (no network: the page has no external
# resource, and background networking is off), and checks the DOM Chromium dumps against
# the plan's --format=json (inspect_html_browser_check.py): 0 script errors, every
# device with its memory peak, every boxing with its bytes, and each device's memory
# view (#selftest renders every view of every device).
#
# Skips (exit 0, "SKIP: chromium not installed", a skipped test case in Bazel's XML) where
# Debian's chromium is missing; `tools/dev.sh test` installs it and fails the test if it
# is still missing (ONEFLOW_REQUIRE_TEST_DEPS).
set -euo pipefail
ONEFLOW=tools/cli/oneflow
GPT=examples/gpt/gpt
CHECK=tools/cli/inspect_html_browser_check.py
DIR="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

CHROMIUM="$(command -v chromium || true)"
# tools/dev.sh test installs chromium and says so (ONEFLOW_REQUIRE_TEST_DEPS): missing
# there is a failure, not a skip.
if [[ -z "$CHROMIUM" && ",${ONEFLOW_REQUIRE_TEST_DEPS:-}," == *",chromium,"* ]]; then
  fail "chromium is missing, but ONEFLOW_REQUIRE_TEST_DEPS=$ONEFLOW_REQUIRE_TEST_DEPS says tools/dev.sh installed it"
fi
if [[ -z "$CHROMIUM" ]]; then
  echo "SKIP: chromium not installed (apt-get install chromium, or run tools/dev.sh test)"
  # Bazel's test XML: a skipped test case, where the runner reads one.
  if [[ -n "${XML_OUTPUT_FILE:-}" ]]; then
    cat >"$XML_OUTPUT_FILE" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="inspect_html_browser_test" tests="1" skipped="1"><testcase name="browser"><skipped message="chromium not installed"/></testcase></testsuite></testsuites>
XML
  fi
  exit 0
fi

"$GPT" --dp=2 --tp=2 --devices_per_node=4 --plan_out="$DIR/gpt.plan" >/dev/null
"$ONEFLOW" inspect "$DIR/gpt.plan" --format=json >"$DIR/gpt.json"
"$ONEFLOW" inspect "$DIR/gpt.plan" --format=html >"$DIR/gpt.html"

# Self-contained: no URL a browser would fetch (links to the docs are fine, there are none).
if grep -Eq '<(script|link|img|iframe)[^>]+(src|href)=' "$DIR/gpt.html"; then
  fail "the page loads an external resource: $(grep -Eo '<(script|link|img|iframe)[^>]+(src|href)=[^>]*' "$DIR/gpt.html" | head -3)"
fi
# One <script> element per script: the data blob cannot have closed its element early.
[[ "$(grep -o '</script>' "$DIR/gpt.html" | wc -l)" -eq 3 ]] || fail "expected 3 </script>: head, data, main"

# A profile and HOME of the test's own; no sandbox (tests may run as root); nothing
# fetched in the background.
export HOME="$DIR/home"
mkdir -p "$HOME"
dump() {
  timeout 120 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --disable-extensions \
    --disable-default-apps --user-data-dir="$DIR/profile" --virtual-time-budget=10000 \
    --dump-dom "file://$DIR/gpt.html$1" 2>"$DIR/chromium.log" \
    || fail "chromium exited $? on gpt.html$1: $(tail -5 "$DIR/chromium.log")"
}
dump "" >"$DIR/default.dom"
dump "#selftest" >"$DIR/selftest.dom"
grep -q 'id="of-status"' "$DIR/default.dom" || fail "no status marker in the DOM: $(head -c 2000 "$DIR/default.dom")"

python3 "$CHECK" "$DIR/gpt.json" "$DIR/default.dom" "$DIR/selftest.dom" || {
  grep -o '<div id="of-status"[^>]*>[^<]*' "$DIR/default.dom" "$DIR/selftest.dom" >&2 || true
  fail "the rendered page does not match the plan"
}
echo "PASS"
