#!/usr/bin/env bash
# Runs the sbp_layout example as a user would and checks what it prints.
set -euo pipefail
BIN=examples/sbp_layout/sbp_layout
fail() { echo "FAIL: $*" >&2; exit 1; }

out="$("$BIN" --shape='[10, 3]' --placement='cpu{0:0-3}' --sbp='S(0)' --print_values=false)"
# 10 rows over 4 devices: 3, 3, 2, 2.
grep -q "rank 0  device 0:0  coordinate (0)  slice \[0:3, 0:3\]  shape \[3, 3\]  36 bytes" <<<"$out" || fail "$out"
grep -q "rank 3  device 0:3  coordinate (3)  slice \[8:10, 0:3\]  shape \[2, 3\]  24 bytes" <<<"$out" || fail "$out"
grep -q "held by 1..1 devices; 0 of 30 values differ" <<<"$out" || fail "$out"

out="$("$BIN" --shape='[6, 5]' --placement='cpu{0:0-1, 1:0-1}[2, 2]' --sbp='[S(0), B]' --print_values=false)"
grep -q "rank 3  device 1:1  coordinate (1, 1)  slice \[3:6, 0:5\]" <<<"$out" || fail "$out"
grep -q "held by 2..2 devices; 0 of 30 values differ" <<<"$out" || fail "$out"

# Bad input: exit 1 and a message naming the flag and what is valid.
set +e
err="$("$BIN" --shape='[6, 5]' --placement='cpu{0:0-3}' --sbp='S(2)' 2>&1)"; rc=$?
set -e
[[ $rc -eq 1 ]] || fail "bad --sbp exited $rc"
[[ "$err" == "sbp_layout: --sbp='S(2)': SBP S(2) splits axis 2 of a tensor of shape [6, 5]; valid split axes are 0..1" ]] || fail "$err"
echo PASS
