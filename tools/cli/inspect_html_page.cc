// The page of `oneflow inspect --format=html`: its head (markup, CSS and the error
// counter) here, its script in inspect_html_script.js (embedded by inspect_html_script.cc), around the plan's JSON blob
// (inspect_html.cc writes the blob between the head and the tail). Self-contained: no
// network, no external scripts or fonts; it opens from disk.
//
// How the script works (docs/inspect.md, "The plan viewer"):
//   - A first inline script in <head> counts script errors (window 'error' and
//     'unhandledrejection' events) and, on 'load', writes them into #of-status
//     (data-errors, data-rendered, data-load-ms), which the browser test reads.
//   - The blob is <script type="application/json" id="plan-data">, parsed once with
//     JSON.parse; names are indices into `strings`, actors and registers flat number
//     arrays in `tables` (rows of 6 and 10, see ActorsArray / RegistersArray).
//   - Views render only when shown, and only what is visible: the graph a window of
//     topological layers, long tables a page at a time, a device's actors and memory
//     when that device is selected. The URL hash keeps the state (#view=memory&device=3)
//     and #selftest renders every view of every device once (what the test loads).
#include "tools/cli/inspect_html.h"

namespace oneflow::cli {
namespace {

constexpr char kHead[] = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="oneflow inspect --format=html">
<title>oneflow plan</title>
<script>
"use strict";
window.ofErrors = [];
window.addEventListener("error", function (e) {
  window.ofErrors.push(String(e.message) + " (line " + e.lineno + ")");
});
window.addEventListener("unhandledrejection", function (e) {
  window.ofErrors.push("unhandled rejection: " + String(e.reason));
});
window.addEventListener("load", function () {
  var status = document.getElementById("of-status");
  if (!status) { status = document.createElement("div"); status.id = "of-status"; document.body.appendChild(status); }
  status.setAttribute("data-errors", String(window.ofErrors.length));
  status.setAttribute("data-rendered", window.ofRendered ? "yes" : "no");
  status.setAttribute("data-load-ms", String(Math.round(performance.now())));
  status.textContent = "script errors: " + window.ofErrors.length +
      (window.ofErrors.length ? " — " + window.ofErrors.join("; ") : "") +
      "; rendered: " + (window.ofRendered ? "yes" : "no") +
      "; parse " + (window.ofParseMs || 0) + " ms, first render " + (window.ofRenderMs || 0) +
      " ms, load " + Math.round(performance.now()) + " ms";
});
</script>
<style>
:root { --fg: #1d2330; --muted: #667085; --line: #d0d5dd; --bg: #f7f8fa; --accent: #2f6fdf;
        --boxing: #d9822b; --compute: #4f8fdf; --comm: #d9822b; --transfer: #8e5bd6; }
* { box-sizing: border-box; }
body { margin: 0; font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { background: #fff; border-bottom: 1px solid var(--line); padding: 8px 16px; position: sticky; top: 0; z-index: 5; }
header h1 { font-size: 16px; margin: 0 12px 0 0; display: inline-block; }
header .meta { color: var(--muted); }
.controls { margin-top: 6px; display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
nav button { border: 1px solid var(--line); background: #fff; padding: 4px 10px; border-radius: 4px; cursor: pointer; font: inherit; }
nav button.active { background: var(--accent); color: #fff; border-color: var(--accent); }
input[type=search] { width: 260px; padding: 4px 8px; border: 1px solid var(--line); border-radius: 4px; font: inherit; }
select, .controls button, .pager button { font: inherit; padding: 3px 8px; }
main { padding: 12px 16px; }
section.view { display: none; }
section.view.active { display: block; }
h2 { font-size: 15px; margin: 14px 0 6px; }
h3 { font-size: 13px; margin: 10px 0 4px; }
table { border-collapse: collapse; background: #fff; }
th, td { border: 1px solid var(--line); padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #eef1f5; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: var(--muted); }
.mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
.pager { margin: 6px 0; }
.hit { background: #fff3b0; }
.card { white-space: pre-wrap; background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
#graph-wrap { position: relative; overflow: auto; background: #fff; border: 1px solid var(--line); height: calc(100vh - 210px); min-height: 360px; }
#graph-canvas { position: relative; }
#graph-canvas svg { position: absolute; left: 0; top: 0; pointer-events: none; }
.node { position: absolute; width: 200px; background: #fff; border: 1px solid #98a2b3; border-radius: 5px; padding: 3px 6px; font-size: 11px; cursor: pointer; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }
.node b { font-size: 12px; }
.node.source { background: #f2f4f7; border-style: dashed; }
.node.hit { background: #fff3b0; border-color: #b58100; }
.node.selected { outline: 2px solid var(--accent); }
.node .sig { color: var(--muted); font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 10px; }
.more { position: absolute; width: 200px; font-size: 11px; color: var(--accent); cursor: pointer; }
.blabel { position: absolute; transform: translate(-50%, 0); background: #fff4e5; border: 1px solid var(--boxing); color: #7a4100; border-radius: 3px; font-size: 10px; padding: 0 3px; cursor: pointer; white-space: nowrap; z-index: 2; }
.stub { position: absolute; font-size: 10px; color: var(--muted); white-space: nowrap; }
#details { white-space: pre-wrap; }
.legend span { display: inline-block; margin-right: 12px; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: middle; }
canvas { background: #fff; border: 1px solid var(--line); display: block; }
#tooltip { position: fixed; pointer-events: none; background: #1d2330; color: #fff; padding: 4px 6px; border-radius: 4px; font-size: 11px; display: none; z-index: 10; max-width: 520px; white-space: pre-wrap; }
details.group { background: #fff; border: 1px solid var(--line); border-radius: 4px; margin: 4px 0; padding: 2px 8px; }
details.group summary { cursor: pointer; }
#of-status { color: var(--muted); font-size: 11px; padding: 4px 16px; }
</style>
</head>
<body>
<header>
  <h1 id="title">plan</h1><span class="meta" id="meta"></span>
  <div class="controls">
    <nav id="tabs">
      <button data-view="overview">Overview</button>
      <button data-view="graph">Logical graph</button>
      <button data-view="boxings">Boxings</button>
      <button data-view="actors">Devices × order</button>
      <button data-view="memory">Memory</button>
      <button data-view="collectives">Collectives</button>
    </nav>
    <input type="search" id="search" placeholder="filter by op or tensor name" aria-label="filter by op or tensor name">
    <label>device <select id="device"></select></label>
  </div>
</header>
<main>
  <section class="view" id="view-overview"></section>
  <section class="view" id="view-graph"></section>
  <section class="view" id="view-boxings"></section>
  <section class="view" id="view-actors"></section>
  <section class="view" id="view-memory"></section>
  <section class="view" id="view-collectives"></section>
</main>
<div id="tooltip"></div>
<div id="of-status">script errors: not yet counted</div>
<script type="application/json" id="plan-data">)html";

}  // namespace

absl::string_view PlanViewerPageHead() { return kHead; }

}  // namespace oneflow::cli
