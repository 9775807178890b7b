// The script of the `oneflow inspect --format=html` page: renders the views from the
// plan's JSON blob. Embedded at build time (//tools/cli:inspect_html_script_js wraps it in
// a C++ raw string) and written after the blob by PlanViewerPageTail
// (inspect_html_script.cc). How it works: the top of inspect_html_page.cc and
// docs/inspect.md, "The plan viewer".
"use strict";
(function () {
var t0 = performance.now();
var P = JSON.parse(document.getElementById("plan-data").textContent);
window.ofParseMs = Math.round(performance.now() - t0);
var S = P.strings;
var $ = function (id) { return document.getElementById(id); };

// ---- helpers ---------------------------------------------------------------------
function esc(text) {
  return String(text).replace(/[&<>"']/g, function (c) {
    return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
  });
}
var UNITS = [["TiB", 1099511627776], ["GiB", 1073741824], ["MiB", 1048576], ["KiB", 1024]];
// As plan/plan_format.cc: "512 B", "16.00 KiB (16384 B)".
function bytesShort(b) {
  var m = Math.abs(b);
  for (var i = 0; i < UNITS.length; i++) if (m >= UNITS[i][1]) return (b / UNITS[i][1]).toFixed(2) + " " + UNITS[i][0];
  return b + " B";
}
function bytes(b) { return Math.abs(b) < 1024 ? b + " B" : bytesShort(b) + " (" + b + " B)"; }
function alignUp(b) { var a = P.alignment || 1; return Math.ceil(b / a) * a; }
function el(tag, attrs, html) {
  var e = document.createElement(tag);
  if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (html !== undefined) e.innerHTML = html;
  return e;
}
function query() { return $("search").value.trim().toLowerCase(); }
function matches(q, texts) {
  if (!q) return true;
  for (var i = 0; i < texts.length; i++) if (String(texts[i]).toLowerCase().indexOf(q) >= 0) return true;
  return false;
}
var tooltip = $("tooltip");
function showTip(ev, text) {
  tooltip.textContent = text; tooltip.style.display = "block";
  tooltip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 540) + "px";
  tooltip.style.top = (ev.clientY + 12) + "px";
}
function hideTip() { tooltip.style.display = "none"; }
// A table of `rows` (arrays of cell HTML) shown `page` rows at a time.
function pagedTable(container, head, rows, page, rowAttrs) {
  var shown = 0;
  var table = el("table");
  table.innerHTML = "<thead><tr>" + head.map(function (h) {
    return "<th" + (h.num ? " class=num" : "") + ">" + esc(h.t || h) + "</th>"; }).join("") + "</tr></thead>";
  var body = el("tbody"); table.appendChild(body);
  var pager = el("div", { class: "pager" });
  function more() {
    var html = [];
    var end = Math.min(rows.length, shown + page);
    for (var i = shown; i < end; i++) {
      html.push("<tr" + (rowAttrs ? rowAttrs(i) : "") + ">" + rows[i].map(function (c, j) {
        return "<td" + (head[j].num ? " class=num" : "") + ">" + c + "</td>"; }).join("") + "</tr>");
    }
    body.insertAdjacentHTML("beforeend", html.join(""));
    shown = end;
    pager.innerHTML = "";
    pager.appendChild(document.createTextNode(shown + " of " + rows.length + " shown "));
    if (shown < rows.length) {
      var b = el("button", null, "show " + Math.min(page, rows.length - shown) + " more");
      b.onclick = more; pager.appendChild(b);
      var all = el("button", null, "show all");
      all.onclick = function () { page = rows.length; more(); }; pager.appendChild(all);
    }
  }
  container.appendChild(table); container.appendChild(pager);
  more();
}

// ---- the plan, indexed --------------------------------------------------------------
var ops = P.ops.map(function (o, i) {
  return { i: i, name: S[o[0]], type: o[1] < 0 ? "?" : S[o[1]], placement: S[o[2]], sig: o[3],
           inputs: o[4].map(function (t) { return S[t]; }), outputs: o[5].map(function (t) { return S[t]; }) };
});
var devices = P.devices;
var variables = {}; P.variables.forEach(function (t) { variables[S[t]] = 1; });
var dataOutputs = {}; P.data_outputs.forEach(function (t) { dataOutputs[S[t]] = 1; });
var boxings = P.boxings;
function boxingStepsText(b) {
  return b.steps.map(function (s) {
    return s.kind + (s.codec ? " [" + s.codec + "]" : "") + (s.sparsity ? " [sparse " + s.sparsity.kind + "]" : "");
  }).join(", ");
}
function sparsityText(sp) {
  if (!sp) return "";
  return sp.kind + " of '" + sp.rows_tensor + "': " + sp.expected_rows + " of " + sp.rows + " rows expected (max " +
      sp.max_rows + "), expected " + bytes(sp.expected_bytes) + " vs worst case " + bytes(sp.worst_bytes) + " per device";
}
function boxingText(b) {
  var lines = ["boxing " + b.id + ": " + S[b.tensor] + (b.shape ? " " + b.shape : "") + ", " + S[b.producer] + " -> " +
               S[b.consumer] + ", " + b.src_sbp + " -> " + b.dst_sbp + " on " + b.src_placement +
               (b.dst_placement !== b.src_placement ? " to " + b.dst_placement : "")];
  b.steps.forEach(function (s, k) {
    lines.push("  step " + k + ": " + s.kind + " on axis " + s.axis + ", " + s.src_sbp + " -> " + s.dst_sbp + ", " +
               bytes(s.bytes) + " per device, " + (s.collective < 0 ? "local" : "collective " + s.collective) +
               (s.bucket >= 0 ? ", bucket " + s.bucket : ""));
    if (s.codec) lines.push("    compressed: " + s.codec + "; " + bytes(s.dense_bytes) + " dense -> " + bytes(s.bytes) +
                            " on the wire per device" + (s.seconds_saved !== null ? "; saves " + (s.seconds_saved * 1e3).toPrecision(3) + " ms" : ""));
    if (s.decision) lines.push("    decision: " + s.decision);
    if (s.sparsity) lines.push("    sparsity: " + sparsityText(s.sparsity));
  });
  lines.push("  bytes per iteration: " + bytes(b.bytes) + (b.dense_bytes !== b.bytes ? " (" + bytes(b.dense_bytes) + " dense)" : ""));
  if (b.compression) lines.push("  compression: " + b.compression);
  if (b.sparsity) lines.push("  sparsity: " + sparsityText(b.sparsity));
  lines.push("  reason: " + b.reason);
  return lines.join("\n");
}

// ---- header, device choice, tabs, state in the URL hash -------------------------------
document.title = "plan '" + P.job + "' — oneflow inspect";
$("title").textContent = "plan '" + P.job + "'";
$("meta").textContent = "format version " + P.format_version + " · " + P.cluster + " · " + ops.length + " ops, " +
    boxings.length + " boxings, " + bytes(P.boxing_bytes) + " boxing traffic per iteration · " + devices.length +
    " devices" + (P.micro_batches > 1 ? " · " + P.micro_batches + " micro-batches" : "");
var deviceSelect = $("device");
deviceSelect.innerHTML = devices.map(function (d, i) {
  return "<option value=" + i + ">" + i + " (" + esc(d.id) + ")</option>"; }).join("");
var state = { view: "overview", device: 0 };
var rendered = {};  // view name -> key of what it shows; re-rendered when the key changes
function renderKey(view) { return view + "|" + state.device + "|" + query(); }
function show(view) {
  if (!VIEWS[view]) view = "overview";
  state.view = view;
  Array.prototype.forEach.call(document.querySelectorAll("#tabs button"), function (b) {
    b.classList.toggle("active", b.getAttribute("data-view") === view); });
  Array.prototype.forEach.call(document.querySelectorAll("section.view"), function (s) {
    s.classList.toggle("active", s.id === "view-" + view); });
  var key = renderKey(view);
  if (rendered[view] !== key) {
    var section = $("view-" + view);
    section.innerHTML = "";
    VIEWS[view](section);
    rendered[view] = key;
  }
  var hash = "view=" + view + "&device=" + state.device + (query() ? "&q=" + encodeURIComponent(query()) : "");
  if (location.hash.slice(1) !== hash && location.hash.indexOf("selftest") < 0) history.replaceState(null, "", "#" + hash);
}
function selectDevice(d) {
  state.device = Math.max(0, Math.min(devices.length - 1, d | 0));
  deviceSelect.value = String(state.device);
}
$("tabs").addEventListener("click", function (e) {
  var v = e.target.getAttribute && e.target.getAttribute("data-view"); if (v) show(v); });
deviceSelect.addEventListener("change", function () { selectDevice(+deviceSelect.value); show(state.view); });
var searchTimer = null;
$("search").addEventListener("input", function () {
  clearTimeout(searchTimer); searchTimer = setTimeout(function () { show(state.view); }, 200); });

// ---- device tables (actors, registers), decoded once per device on demand -------------
var deviceCache = {};
function deviceData(d) {
  if (deviceCache[d]) return deviceCache[d];
  var dev = devices[d];
  var a = P.tables[dev.actors], r = P.tables[dev.registers];
  var n = a.length / 6;
  var data = { n: n, actors: a, regs: r, nregs: r.length / 10 };
  data.actorId = function (pos) { return dev.first_actor_id >= 0 ? dev.first_actor_id + pos : dev.actor_ids[pos]; };
  data.actorName = function (pos) { return S[a[pos * 6]]; };
  deviceCache[d] = data;
  return data;
}
var KIND_COLORS = { data_source: "#12b76a", variable: "#98a2b3", compute: "#4f8fdf", boxing: "#d9822b", sink: "#344054", control: "#f04438" };
function kindColor(k) { return KIND_COLORS[P.actor_kinds[k]] || "#667085"; }

// ---- overview: plan summary and totals per device ------------------------------------
function renderOverview(section) {
  section.appendChild(el("h2", null, "Totals per device"));
  section.appendChild(el("p", { class: "muted" },
      "Click a device to see its actors in order, its memory and its collectives. Peak is the planned arena + persistent memory; " +
      "the lower bound is the largest sum of simultaneously live registers (DevicePlan.peak_bytes, lower_bound_bytes)."));
  var q = query();
  var rows = [], idx = [];
  devices.forEach(function (d, i) {
    if (!matches(q, [d.id, String(i)])) return;
    idx.push(i);
    rows.push(["<a href='#' data-device=" + i + ">" + i + " (" + esc(d.id) + ")</a>", d.stage >= 0 ? d.stage : "",
               d.num_actors + " <span class=muted>(" + esc(d.actors_by_kind.map(function (k) { return k[0] + " " + k[1]; }).join(", ")) + ")</span>",
               d.num_registers, esc(bytes(d.register_bytes)),
               "<span class=peak data-bytes=" + d.peak_bytes + ">" + esc(bytes(d.peak_bytes)) + "</span>",
               esc(bytes(d.lower_bound_bytes)), esc(bytes(d.persistent_bytes)),
               esc(bytes(d.bytes_sent)), esc(bytes(d.bytes_received)), d.collective_order.length]);
  });
  var wrap = el("div");
  pagedTable(wrap, ["device", "stage", { t: "actors" }, { t: "registers", num: 1 }, { t: "register bytes", num: 1 },
                    { t: "peak memory", num: 1 }, { t: "lower bound", num: 1 }, { t: "persistent", num: 1 },
                    { t: "sent / iteration", num: 1 }, { t: "received / iteration", num: 1 }, { t: "collectives", num: 1 }],
             rows, 256, function (k) { return " class=device-row data-device=" + idx[k] + " data-id='" + esc(devices[idx[k]].id) + "'"; });
  wrap.addEventListener("click", function (e) {
    var d = e.target.getAttribute && e.target.getAttribute("data-device");
    if (d !== null && d !== undefined) { e.preventDefault(); selectDevice(+d); show("memory"); }
  });
  section.appendChild(wrap);
  section.appendChild(el("h2", null, "Plan"));
  var card = el("div", { class: "card mono" });
  card.textContent = ops.length + " logical ops, " + boxings.length + " boxings (" + bytes(P.boxing_bytes) + " per iteration" +
      (P.boxing_dense_bytes !== P.boxing_bytes ? ", " + bytes(P.boxing_dense_bytes) + " dense" : "") + "), " +
      P.collectives.length / 6 + " collectives in " + P.groups.length + " groups, " + P.buckets.length + " gradient buckets; " +
      "register count " + P.register_count;
  section.appendChild(card);
}

// ---- logical graph: topological layers, a window of them rendered --------------------
var graph = null;
function buildGraph() {
  var nodes = [], byName = {}, producerOf = {};
  ops.forEach(function (o) {
    var n = { name: o.name, op: o, ins: [], outs: [] };
    byName[o.name] = n; nodes.push(n);
    o.outputs.forEach(function (t) { producerOf[t] = n; });
  });
  var edges = [];
  ops.forEach(function (o) {
    var to = byName[o.name];
    o.inputs.forEach(function (t) {
      var from = producerOf[t];
      if (!from) {  // a variable or data-source output: a source node named by the tensor
        from = byName["tensor:" + t];
        if (!from) {
          from = { name: t, source: variables[t] ? "variable" : dataOutputs[t] ? "data" : "input", ins: [], outs: [] };
          byName["tensor:" + t] = from; nodes.push(from);
        }
      }
      var e = { from: from, to: to, tensor: t, boxings: [] };
      edges.push(e); from.outs.push(e); to.ins.push(e);
    });
  });
  var edgeByKey = {};
  edges.forEach(function (e) { edgeByKey[e.to.name + "\u0000" + e.tensor] = e; });
  boxings.forEach(function (b) {
    var e = edgeByKey[S[b.consumer] + "\u0000" + S[b.tensor]];
    if (e) e.boxings.push(b);
  });
  // Longest-path layers over ops (Kahn's order); sources go one layer before their first consumer.
  var indeg = new Map(), queue = [];
  nodes.forEach(function (n) {
    if (n.source) return;
    var k = n.ins.filter(function (e) { return !e.from.source; }).length;
    indeg.set(n, k); n.layer = 0;
    if (k === 0) queue.push(n);
  });
  for (var qi = 0; qi < queue.length; qi++) {
    var n = queue[qi];
    n.outs.forEach(function (e) {
      if (e.to.source) return;
      e.to.layer = Math.max(e.to.layer, n.layer + 1);
      indeg.set(e.to, indeg.get(e.to) - 1);
      if (indeg.get(e.to) === 0) queue.push(e.to);
    });
  }
  nodes.forEach(function (n) {
    if (!n.source) { if (n.layer === undefined) n.layer = 0; return; }
    var first = Infinity;
    n.outs.forEach(function (e) { first = Math.min(first, e.to.layer); });
    n.layer = Math.max(0, (first === Infinity ? 0 : first) - 1);
  });
  var layers = [];
  nodes.forEach(function (n) { (layers[n.layer] = layers[n.layer] || []).push(n); });
  for (var l = 0; l < layers.length; l++) layers[l] = layers[l] || [];
  graph = { nodes: nodes, edges: edges, layers: layers, byName: byName, start: 0, width: 8, expanded: {}, selected: null };
}
var NODE_W = 200, NODE_H = 46, COL_GAP = 130, ROW_GAP = 12, LAYER_CAP = 40;
function renderGraph(section) {
  if (!graph) buildGraph();
  var q = query();
  var hits = q ? graph.nodes.filter(function (n) {
    return matches(q, [n.name].concat(n.op ? n.op.inputs.concat(n.op.outputs, [n.op.type]) : []));
  }) : [];
  var hitSet = new Set(hits);
  if (hits.length && !hits.some(function (n) { return n.layer >= graph.start && n.layer < graph.start + graph.width; })) {
    graph.start = Math.max(0, hits[0].layer - 1);
  }
  var bar = el("div", { class: "controls" });
  var last = Math.max(0, graph.layers.length - graph.width);
  bar.innerHTML = "<span>layers <b>" + graph.start + "–" + Math.min(graph.layers.length, graph.start + graph.width) +
      "</b> of " + graph.layers.length + " (" + graph.nodes.length + " nodes, " + graph.edges.length + " edges)</span>" +
      "<button data-a=first>« first</button><button data-a=prev>‹ back</button>" +
      "<input type=range min=0 max=" + last + " value=" + graph.start + " style='width:320px'>" +
      "<button data-a=next>on ›</button><button data-a=lastl>last »</button>" +
      "<label>window <select><option>4</option><option>8</option><option>12</option><option>16</option><option>30</option></select> layers</label>" +
      (q ? "<span>" + hits.length + " match" + (hits.length === 1 ? "" : "es") + (hits.length ? " <button data-a=nexthit>next match</button>" : "") + "</span>" : "");
  bar.querySelector("select").value = String(graph.width);
  section.appendChild(bar);
  var legend = el("div", { class: "legend muted" },
      "<span><span class=swatch style='background:#fff;border:1px solid #98a2b3'></span>op: name, type, SBP signature (inputs -> outputs)</span>" +
      "<span><span class=swatch style='background:#f2f4f7;border:1px dashed #98a2b3'></span>variable / data source</span>" +
      "<span><span class=swatch style='background:var(--boxing)'></span>boxing on an edge: step kinds, bytes per iteration (click for details)</span>" +
      "<span>→ N: edges to layers outside the window</span>");
  section.appendChild(legend);
  var wrap = el("div", { id: "graph-wrap" });
  var canvas = el("div", { id: "graph-canvas" });
  wrap.appendChild(canvas);
  section.appendChild(wrap);
  var details = el("div", { class: "card mono", id: "details" }, "Click an op or a boxing label for its details.");
  section.appendChild(details);

  var pos = new Map(), html = [], maxY = 0;
  var end = Math.min(graph.layers.length, graph.start + graph.width);
  for (var l = graph.start; l < end; l++) {
    var layer = graph.layers[l];
    var cap = graph.expanded[l] ? layer.length : Math.min(layer.length, LAYER_CAP);
    // Matches first, so a filtered node in a wide layer is not hidden behind "more".
    var ordered = q ? layer.filter(function (n) { return hitSet.has(n); }).concat(layer.filter(function (n) { return !hitSet.has(n); })) : layer;
    var x = 10 + (l - graph.start) * (NODE_W + COL_GAP);
    for (var k = 0; k < cap; k++) {
      var n = ordered[k], y = 24 + k * (NODE_H + ROW_GAP);
      pos.set(n, { x: x, y: y });
      var cls = "node" + (n.source ? " source" : "") + (hitSet.has(n) ? " hit" : "") + (graph.selected === n ? " selected" : "");
      var label = n.op ? "<b>" + esc(n.name) + "</b> <span class=muted>" + esc(n.op.type) + "</span><br><span class=sig>" + esc(n.op.sig) + "</span>"
                       : "<b>" + esc(n.name) + "</b><br><span class=muted>" + esc(n.source) + "</span>";
      html.push("<div class='" + cls + "' data-node=" + graph.nodes.indexOf(n) + " style='left:" + x + "px;top:" + y + "px;height:" + NODE_H +
                "px' title='" + esc(n.name + (n.op ? "\n" + n.op.sig + "\non " + n.op.placement : "")) + "'>" + label + "</div>");
      maxY = Math.max(maxY, y + NODE_H);
    }
    if (cap < layer.length) {
      var my = 24 + cap * (NODE_H + ROW_GAP);
      html.push("<div class=more data-layer=" + l + " style='left:" + x + "px;top:" + my + "px'>+ " + (layer.length - cap) + " more in layer " + l + "</div>");
      maxY = Math.max(maxY, my + 20);
    }
    html.push("<div class=stub style='left:" + x + "px;top:4px'>layer " + l + " (" + layer.length + ")</div>");
  }
  var width = 20 + (end - graph.start) * (NODE_W + COL_GAP);
  canvas.style.width = width + "px"; canvas.style.height = (maxY + 30) + "px";
  // Edges between shown nodes; a boxing gets a label on its edge.
  var paths = [], outStubs = new Map(), inStubs = new Map();
  graph.edges.forEach(function (e) {
    var a = pos.get(e.from), b = pos.get(e.to);
    if (a && b) {
      var x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2;
      var boxed = e.boxings.length > 0;
      paths.push("<path d='M" + x1 + "," + y1 + " C" + (x1 + 60) + "," + y1 + " " + (x2 - 60) + "," + y2 + " " + x2 + "," + y2 +
                 "' stroke='" + (boxed ? "#d9822b" : "#98a2b3") + "' stroke-width='" + (boxed ? 2 : 1) + "' fill='none' marker-end='url(#arrow)'/>");
      e.boxings.forEach(function (bx, j) {
        var lx = (x1 + x2) / 2, ly = (y1 + y2) / 2 - 8 + j * 16;
        html.push("<div class=blabel data-boxing=" + boxings.indexOf(bx) + " style='left:" + lx + "px;top:" + ly + "px'>" +
                  esc("#" + bx.id + " " + bx.steps.map(function (s) { return s.kind; }).join("+") + " " + bytesShort(bx.bytes) +
                      (bx.steps.some(function (s) { return s.codec; }) ? " ⇣" : "") + (bx.sparsity ? " sparse" : "")) + "</div>");
      });
    } else if (a && !b) {
      outStubs.set(e.from, (outStubs.get(e.from) || 0) + 1);
    } else if (b && !a) {
      inStubs.set(e.to, (inStubs.get(e.to) || 0) + 1);
    }
  });
  outStubs.forEach(function (count, n) { var p = pos.get(n);
    html.push("<div class=stub style='left:" + (p.x + NODE_W + 4) + "px;top:" + (p.y + 2) + "px'>→ " + count + "</div>"); });
  inStubs.forEach(function (count, n) { var p = pos.get(n);
    html.push("<div class=stub style='left:" + (p.x - 34) + "px;top:" + (p.y + NODE_H - 14) + "px'>" + count + " →</div>"); });
  canvas.innerHTML = "<svg width=" + width + " height=" + (maxY + 30) + "><defs><marker id=arrow viewBox='0 0 10 10' refX=10 refY=5 markerWidth=6 markerHeight=6 orient=auto-start-reverse><path d='M0,0 L10,5 L0,10 z' fill='#667085'/></marker></defs>" +
      paths.join("") + "</svg>" + html.join("");
  function move(start) { graph.start = Math.max(0, Math.min(last, start)); rendered.graph = null; show("graph"); }
  bar.addEventListener("click", function (ev) {
    var a = ev.target.getAttribute && ev.target.getAttribute("data-a");
    if (a === "first") move(0); else if (a === "prev") move(graph.start - graph.width + 1);
    else if (a === "next") move(graph.start + graph.width - 1); else if (a === "lastl") move(last);
    else if (a === "nexthit") {
      var next = hits.filter(function (n) { return n.layer >= graph.start + graph.width; })[0] || hits[0];
      move(next.layer - 1);
    }
  });
  bar.querySelector("input").addEventListener("change", function (ev) { move(+ev.target.value); });
  bar.querySelector("select").addEventListener("change", function (ev) { graph.width = +ev.target.value; move(graph.start); });
  canvas.addEventListener("click", function (ev) {
    var t = ev.target.closest ? ev.target.closest("[data-node],[data-boxing],[data-layer]") : null;
    if (!t) return;
    if (t.hasAttribute("data-layer")) { graph.expanded[+t.getAttribute("data-layer")] = true; rendered.graph = null; show("graph"); return; }
    if (t.hasAttribute("data-boxing")) { details.textContent = boxingText(boxings[+t.getAttribute("data-boxing")]); return; }
    var n = graph.nodes[+t.getAttribute("data-node")];
    graph.selected = n;
    Array.prototype.forEach.call(canvas.querySelectorAll(".node.selected"), function (x) { x.classList.remove("selected"); });
    t.classList.add("selected");
    var lines = [n.op ? "op " + n.name + " (" + n.op.type + ") on " + n.op.placement + ", layer " + n.layer + "\n  SBP: " + n.op.sig
                      : n.source + " " + n.name + ", layer " + n.layer];
    n.ins.forEach(function (e) { lines.push("  in:  " + e.tensor + " from " + e.from.name + " (layer " + e.from.layer + ")" +
        e.boxings.map(function (b) { return "\n       boxing " + b.id + ": " + b.src_sbp + " -> " + b.dst_sbp + ", " + boxingStepsText(b) + ", " + bytes(b.bytes) + " per iteration"; }).join("")); });
    n.outs.forEach(function (e) { lines.push("  out: " + e.tensor + " to " + e.to.name + " (layer " + e.to.layer + ")" +
        (e.boxings.length ? ", boxed: " + e.boxings.map(function (b) { return "#" + b.id + " " + bytes(b.bytes); }).join(", ") : "")); });
    details.textContent = lines.join("\n");
  });
}

// ---- boxings table -----------------------------------------------------------------
function renderBoxings(section) {
  var q = query();
  var list = boxings.filter(function (b) {
    return matches(q, [S[b.tensor], S[b.producer], S[b.consumer], b.reason].concat(b.sparsity ? [b.sparsity.rows_tensor] : []));
  });
  section.appendChild(el("p", { class: "muted" }, esc(list.length + " of " + boxings.length + " boxings, " + bytes(P.boxing_bytes) +
      " per iteration in all. Bytes per iteration: what all devices together send.")));
  var rows = list.map(function (b) {
    var codec = b.steps.filter(function (s) { return s.codec; }).map(function (s) { return s.codec; }).join("; ");
    return ["#" + b.id, esc(S[b.tensor]) + " <span class=muted>" + esc(b.shape) + "</span>",
            esc(S[b.producer]) + " → " + esc(S[b.consumer]),
            "<span class=mono>" + esc(b.src_sbp + " -> " + b.dst_sbp) + "</span><br><span class=muted>" + esc(b.src_placement +
              (b.dst_placement !== b.src_placement ? " to " + b.dst_placement : "")) + "</span>",
            esc(b.steps.map(function (s) { return s.kind + " " + bytesShort(s.bytes) + (s.collective >= 0 ? " c" + s.collective : " local"); }).join(", ")),
            esc(codec || (b.compression || "")) + (b.sparsity ? esc((codec ? "; " : "") + sparsityText(b.sparsity)) : "") || "<span class=muted>dense</span>",
            "<span class=bytes data-bytes=" + b.bytes + ">" + esc(bytes(b.bytes)) + "</span>" +
              (b.dense_bytes !== b.bytes ? "<br><span class=muted>" + esc(bytes(b.dense_bytes)) + " dense</span>" : ""),
            esc(b.reason)];
  });
  pagedTable(section, ["id", "tensor", "edge (producer → consumer)", "SBP / placement", "steps",
                       "codec / sparsity", { t: "bytes per iteration", num: 1 }, "reason"],
             rows, 300, function (k) { return " class=boxing-row data-boxing=" + list[k].id; });
}

// ---- devices × order: every device's actors in plan order, lanes per thread kind --------
function renderActors(section) {
  section.appendChild(el("p", { class: "muted" },
      "Without a trace there is no measured time: the x axis is each device's actor order in the plan (the order the engine " +
      "lists them), one lane per thread kind (compute, communication, transfer). Click a row to pick a device."));
  var legend = el("div", { class: "legend" });
  legend.innerHTML = P.actor_kinds.map(function (k, i) {
    return KIND_COLORS[k] ? "<span><span class=swatch style='background:" + KIND_COLORS[k] + "'></span>" + esc(k) + "</span>" : ""; }).join("");
  section.appendChild(legend);
  // Overview: one canvas, 3 px per lane, every device.
  var maxN = 1;
  devices.forEach(function (d) { maxN = Math.max(maxN, d.num_actors); });
  var W = Math.max(600, Math.min(1600, window.innerWidth - 140)), LANE = 3, ROW = 3 * LANE + 3, LEFT = 60;
  var cv = el("canvas", { width: W + LEFT, height: devices.length * ROW + 4 });
  var ctx = cv.getContext("2d");
  ctx.font = "10px sans-serif";
  devices.forEach(function (d, i) {
    var data = deviceData(i), a = data.actors, y = 2 + i * ROW;
    ctx.fillStyle = i === state.device ? "#2f6fdf" : "#667085";
    ctx.fillText(d.id, 2, y + ROW - 3);
    var scale = W / maxN;
    for (var p = 0; p < data.n; p++) {
      ctx.fillStyle = kindColor(a[p * 6 + 1]);
      ctx.fillRect(LEFT + Math.floor(p * scale), y + Math.min(2, a[p * 6 + 2]) * LANE, Math.max(1, Math.ceil(scale)), LANE);
    }
  });
  cv.addEventListener("click", function (ev) {
    var r = cv.getBoundingClientRect(), d = Math.floor((ev.clientY - r.top - 2) / ROW);
    if (d >= 0 && d < devices.length) { selectDevice(d); rendered.actors = null; show("actors"); }
  });
  section.appendChild(el("h3", null, "All devices (" + devices.length + "), actor order → (" + maxN + " positions at most)"));
  section.appendChild(cv);
  // The selected device, a window of positions at a time.
  var d = state.device, dev = devices[d], data = deviceData(d), a = data.actors;
  section.appendChild(el("h3", null, esc("Device " + d + " (" + dev.id + "): " + data.n + " actors")));
  var q = query(), hits = [];
  if (q) for (var p = 0; p < data.n; p++) if (data.actorName(p).toLowerCase().indexOf(q) >= 0) hits.push(p);
  var WIN = 240, start = q && hits.length ? Math.max(0, hits[0] - 20) : 0;
  var bar = el("div", { class: "controls" });
  bar.innerHTML = "<span class=pos></span><input type=range min=0 max=" + Math.max(0, data.n - WIN) + " value=" + start + " style='width:420px'>" +
      (q ? "<span>" + hits.length + " actors match</span>" : "");
  section.appendChild(bar);
  var lanes = el("div"); section.appendChild(lanes);
  var list = el("div"); section.appendChild(list);
  function draw(s) {
    bar.querySelector(".pos").textContent = "positions " + s + "–" + Math.min(data.n, s + WIN) + " of " + data.n;
    var cw = 5, LH = 22, svg = ["<svg width=" + (WIN * cw + 120) + " height=" + (3 * LH + 20) + ">"];
    ["compute", "communication", "transfer"].forEach(function (name, t) {
      svg.push("<text x=0 y=" + (t * LH + 15) + " font-size=11 fill='#667085'>" + name + "</text>");
    });
    for (var p = s; p < Math.min(data.n, s + WIN); p++) {
      var t = Math.min(2, a[p * 6 + 2]), hit = q && data.actorName(p).toLowerCase().indexOf(q) >= 0;
      svg.push("<rect x=" + (110 + (p - s) * cw) + " y=" + (t * LH + 3) + " width=" + (cw - 1) + " height=" + (LH - 6) +
               " fill='" + kindColor(a[p * 6 + 1]) + "'" + (hit ? " stroke='#b58100' stroke-width=2" : "") + "><title>" +
               esc("#" + p + " actor " + data.actorId(p) + " " + P.actor_kinds[a[p * 6 + 1]] + " " + data.actorName(p) +
                   (a[p * 6 + 3] >= 0 ? " (boxing " + a[p * 6 + 3] + " step " + a[p * 6 + 4] + ")" : "") +
                   (a[p * 6 + 5] >= 0 ? " (bucket " + a[p * 6 + 5] + ")" : "")) + "</title></rect>");
    }
    svg.push("</svg>");
    lanes.innerHTML = svg.join("");
    var rows = [];
    for (var k = s; k < Math.min(data.n, s + WIN); k++) {
      if (q && data.actorName(k).toLowerCase().indexOf(q) < 0) continue;
      rows.push("<tr><td class=num>" + k + "</td><td class=num>" + data.actorId(k) + "</td><td>" + esc(data.actorName(k)) + "</td><td>" +
                esc(P.actor_kinds[a[k * 6 + 1]]) + "</td><td>" + esc(P.thread_kinds[a[k * 6 + 2]]) + "</td><td>" +
                (a[k * 6 + 3] >= 0 ? "boxing " + a[k * 6 + 3] + " step " + a[k * 6 + 4] : a[k * 6 + 5] >= 0 ? "bucket " + a[k * 6 + 5] : "") + "</td></tr>");
    }
    list.innerHTML = "<table><thead><tr><th class=num>position</th><th class=num>actor id</th><th>name</th><th>kind</th><th>thread</th><th>boxing</th></tr></thead><tbody>" +
        rows.join("") + "</tbody></table>";
  }
  bar.querySelector("input").addEventListener("input", function (ev) { draw(+ev.target.value); });
  draw(start);
}

// ---- memory of the selected device ----------------------------------------------------
// Live bytes per position as memory planning counts them: the persistent block, plus
// register_count copies of the arena's live (aligned) registers, plus block 2.
function memoryCurve(d) {
  var dev = devices[d], data = deviceData(d), r = data.regs, n = Math.max(1, data.n);
  var delta = new Float64Array(n + 1);
  for (var k = 0; k < data.nregs; k++) {
    var o = k * 10;
    if (r[o + 6] !== 1 || (r[o + 8] & 11)) continue;  // arena registers that own their bytes
    delta[r[o + 2]] += alignUp(r[o + 4]);
    delta[r[o + 3] + 1] -= alignUp(r[o + 4]);
  }
  var blocks = dev.memory_blocks, fixed = 0;
  for (var b = 0; b < blocks.length; b += 4) if (blocks[b] !== 1) fixed += blocks[b + 1];
  var curve = new Float64Array(n), live = 0, max = 0, at = 0;
  for (var p = 0; p < n; p++) {
    live += delta[p];
    curve[p] = fixed + dev.register_count * live;
    if (curve[p] > max) { max = curve[p]; at = p; }
  }
  return { curve: curve, max: max, at: at, fixed: fixed };
}
function renderMemory(section) {
  var d = state.device, dev = devices[d], data = deviceData(d), r = data.regs;
  var mc = memoryCurve(d);
  section.appendChild(el("h2", null, esc("Memory of device " + d + " (" + dev.id + ")")));
  var summary = el("div", { class: "card mono memory-summary", "data-device": d, "data-peak": dev.peak_bytes,
                             "data-lower-bound": dev.lower_bound_bytes, "data-computed-lower-bound": mc.max });
  var blocks = [];
  for (var b = 0; b < dev.memory_blocks.length; b += 4) {
    blocks.push("block " + dev.memory_blocks[b] + ": " + bytes(dev.memory_blocks[b + 1]) + (dev.memory_blocks[b + 2] ? " persistent" : "") +
                (dev.memory_blocks[b + 3] ? ", " + (dev.memory_blocks[b + 1] / dev.memory_blocks[b + 3]) + " copies of " + bytes(dev.memory_blocks[b + 3]) : ""));
  }
  summary.textContent = "peak " + bytes(dev.peak_bytes) + ", lower bound " + bytes(dev.lower_bound_bytes) +
      (dev.lower_bound_bytes > 0 ? ", ratio " + (dev.peak_bytes / dev.lower_bound_bytes).toFixed(2) : "") +
      "\npersistent " + bytes(dev.persistent_bytes) + " (variables and optimizer state); " + data.nregs + " registers, " + bytes(dev.register_bytes) +
      "\nlive bytes from the register lifetimes below: at most " + bytes(mc.max) + " at position " + mc.at + " (" + data.actorName(mc.at) + ")" +
      "\n" + blocks.join("\n");
  section.appendChild(summary);
  // Live bytes over the iteration.
  var W = Math.max(600, Math.min(1500, window.innerWidth - 80)), H = 160, n = Math.max(1, data.n);
  var top = Math.max(dev.peak_bytes, mc.max, 1);
  var cv = el("canvas", { width: W, height: H + 20 }), ctx = cv.getContext("2d");
  function yOf(v) { return 8 + H - 8 - (v / top) * (H - 8); }
  ctx.strokeStyle = "#4f8fdf"; ctx.beginPath();
  for (var p = 0; p < n; p++) { var x = (p / n) * W; if (p) ctx.lineTo(x, yOf(mc.curve[p])); else ctx.moveTo(x, yOf(mc.curve[p])); }
  ctx.stroke();
  [[dev.peak_bytes, "#f04438", "peak " + bytesShort(dev.peak_bytes)], [dev.lower_bound_bytes, "#12b76a", "lower bound " + bytesShort(dev.lower_bound_bytes)]].forEach(function (l, i) {
    ctx.strokeStyle = l[1]; ctx.setLineDash([4, 3]); ctx.beginPath(); ctx.moveTo(0, yOf(l[0])); ctx.lineTo(W, yOf(l[0])); ctx.stroke();
    ctx.setLineDash([]); ctx.fillStyle = l[1]; ctx.font = "11px sans-serif"; ctx.fillText(l[2], W - 180, Math.max(12, yOf(l[0]) - 3) + i * 14);
  });
  ctx.fillStyle = "#667085"; ctx.fillText("position in the device's actor order → (" + data.n + " actors)", 4, H + 16);
  section.appendChild(el("h3", null, "Live bytes over an iteration (blue), planned peak (red) and lower bound (green)"));
  section.appendChild(cv);
  // Arena layout: x position, y offset in the slot; one rectangle per register.
  var arena = [], stride = 0;
  for (var b2 = 0; b2 < dev.memory_blocks.length; b2 += 4) if (dev.memory_blocks[b2] === 1) stride = dev.memory_blocks[b2 + 3];
  for (var k = 0; k < data.nregs; k++) if (r[k * 10 + 6] === 1 && !(r[k * 10 + 8] & 11)) arena.push(k);
  var AH = 260, av = el("canvas", { width: W, height: AH + 20 }), actx = av.getContext("2d");
  var ymax = Math.max(stride, 1);
  arena.forEach(function (k, i) {
    var o = k * 10, x0 = (r[o + 2] / n) * W, x1 = ((r[o + 3] + 1) / n) * W;
    var y0 = (r[o + 7] / ymax) * AH, h = Math.max(1, (alignUp(r[o + 4]) / ymax) * AH);
    actx.fillStyle = "hsl(" + ((i * 47) % 360) + ",55%,62%)";
    actx.fillRect(x0, AH - y0 - h, Math.max(1, x1 - x0), h);
  });
  actx.fillStyle = "#667085"; actx.font = "11px sans-serif";
  actx.fillText("arena slot: " + bytesShort(stride) + " (offset ↑), position →", 4, AH + 16);
  av.addEventListener("mousemove", function (ev) {
    var rc = av.getBoundingClientRect(), px = (ev.clientX - rc.left) / W * n, off = (AH - (ev.clientY - rc.top)) / AH * ymax;
    for (var i = arena.length - 1; i >= 0; i--) {
      var o = arena[i] * 10;
      if (px >= r[o + 2] && px < r[o + 3] + 1 && off >= r[o + 7] && off < r[o + 7] + alignUp(r[o + 4])) {
        showTip(ev, "r" + r[o] + " " + S[r[o + 1]] + "\n" + bytes(r[o + 4]) + " x " + r[o + 5] + " at offset " + r[o + 7] +
                "\nlive " + r[o + 2] + " (" + data.actorName(r[o + 2]) + ") .. " + r[o + 3] + " (" + data.actorName(r[o + 3]) + ")");
        return;
      }
    }
    hideTip();
  });
  av.addEventListener("mouseleave", hideTip);
  section.appendChild(el("h3", null, "Arena layout: register lifetimes (x) at their offsets (y), " + arena.length + " registers"));
  section.appendChild(av);
  // Every register, filterable.
  var q = query(), rows = [];
  for (var k2 = 0; k2 < data.nregs; k2++) {
    var o2 = k2 * 10, name = S[r[o2 + 1]];
    if (!matches(q, [name])) continue;
    var flags = r[o2 + 8];
    rows.push([r[o2], esc(name), r[o2 + 6], r[o2 + 7], esc(bytes(r[o2 + 4])), r[o2 + 5],
               r[o2 + 2] + " <span class=muted>" + esc(data.actorName(r[o2 + 2])) + "</span>",
               r[o2 + 3] + " <span class=muted>" + esc(data.actorName(r[o2 + 3])) + "</span>",
               [flags & 1 ? "persistent" : "", flags & 2 ? "view of r" + r[o2 + 9] : "", flags & 4 ? "per iteration" : "",
                flags & 8 ? "in bucket r" + r[o2 + 9] : ""].filter(Boolean).join(", ")]);
  }
  section.appendChild(el("h3", null, "Registers (" + rows.length + (q ? " matching" : "") + ")"));
  pagedTable(section, [{ t: "id", num: 1 }, "tensor", { t: "block", num: 1 }, { t: "offset", num: 1 }, { t: "size", num: 1 },
                       { t: "count", num: 1 }, "first (producer)", "last (reader)", "kind"], rows, 200);
}

// ---- collectives per group ------------------------------------------------------------
function renderCollectives(section) {
  var C = P.collectives, q = query(), byGroup = P.groups.map(function () { return []; });
  for (var k = 0; k < C.length; k += 6) byGroup[C[k + 2]].push(k);
  var d = state.device, dev = devices[d];
  section.appendChild(el("p", { class: "muted" },
      "The devices of a group issue its collectives in ascending order; every device's collective order (DevicePlan.collective_order) " +
      "must list a group's collectives in that order. Expand a group to list them."));
  byGroup.forEach(function (list, g) {
    var shown = list.filter(function (k) { return matches(q, [S[C[k + 4]], S[C[k + 1]]]); });
    if (q && !shown.length) return;
    var total = 0; list.forEach(function (k) { total += C[k + 5]; });
    var box = el("details", { class: "group", "data-group": g });
    box.appendChild(el("summary", null, esc("group " + g + ": " + P.groups[g].map(function (i) { return i >= 0 ? devices[i].id : "?"; }).join(", ") +
        " — " + list.length + " collectives" + (q ? " (" + shown.length + " matching)" : "") + ", " + bytes(total) + " per device per iteration")));
    box.addEventListener("toggle", function () {
      if (!box.open || box.getAttribute("data-filled")) return;
      box.setAttribute("data-filled", "1");
      shown.sort(function (x, y) { return C[x + 3] - C[y + 3]; });
      // Checks each member issues the group's collectives in order.
      var ok = P.groups[g].every(function (i) {
        if (i < 0) return true;
        var order = {}, lastOrder = -Infinity, good = true;
        list.forEach(function (k) { order[C[k]] = C[k + 3]; });
        devices[i].collective_order.forEach(function (id) { if (id in order) { if (order[id] < lastOrder) good = false; lastOrder = order[id]; } });
        return good;
      });
      box.appendChild(el("p", null, ok ? "every member issues them in this order" : "<b>a member issues them out of order</b>"));
      pagedTable(box, [{ t: "order", num: 1 }, { t: "id", num: 1 }, "kind", "tensor", { t: "bytes per device", num: 1 }],
                 shown.map(function (k) { return [C[k + 3], C[k], esc(S[C[k + 1]]), esc(S[C[k + 4]]), esc(bytes(C[k + 5]))]; }), 300);
    });
    section.appendChild(box);
  });
  section.appendChild(el("h3", null, esc("Issue order of device " + d + " (" + dev.id + "), " + dev.collective_order.length + " collectives")));
  var byId = {};
  for (var j = 0; j < C.length; j += 6) byId[C[j]] = j;
  var rows = [];
  dev.collective_order.forEach(function (id, i) {
    var k = byId[id];
    if (k === undefined || !matches(q, [S[C[k + 4]]])) return;
    rows.push([i, id, esc(S[C[k + 1]]), esc(S[C[k + 4]]), C[k + 2], C[k + 3], esc(bytes(C[k + 5]))]);
  });
  var wrap = el("div", { class: "collective-order", "data-device": d });
  pagedTable(wrap, [{ t: "#", num: 1 }, { t: "id", num: 1 }, "kind", "tensor", { t: "group", num: 1 }, { t: "order", num: 1 },
                    { t: "bytes per device", num: 1 }], rows, 300);
  section.appendChild(wrap);
}

var VIEWS = { overview: renderOverview, graph: renderGraph, boxings: renderBoxings, actors: renderActors,
              memory: renderMemory, collectives: renderCollectives };

// ---- start: the hash's view and device; #selftest renders everything once -----------
var params = {};
location.hash.slice(1).split("&").forEach(function (kv) {
  var i = kv.indexOf("="); if (kv) params[i < 0 ? kv : kv.slice(0, i)] = i < 0 ? "" : decodeURIComponent(kv.slice(i + 1));
});
if (params.q) $("search").value = params.q;
selectDevice(+params.device || 0);
var t1 = performance.now();
if ("selftest" in params) {
  var checks = [];
  for (var d = 0; d < devices.length; d++) {
    selectDevice(d);
    ["actors", "memory", "collectives"].forEach(function (v) {
      try { show(v); } catch (e) { window.ofErrors.push(v + " of device " + d + ": " + e); }
    });
    var mc = memoryCurve(d);
    checks.push(devices[d].id + ":" + (mc.max === devices[d].lower_bound_bytes ? "ok" : "lower bound " + mc.max + " != " + devices[d].lower_bound_bytes));
    var det = document.querySelectorAll("#view-collectives details");
    Array.prototype.forEach.call(det, function (x) { x.open = true; x.dispatchEvent(new Event("toggle")); });
  }
  ["graph", "boxings", "overview"].forEach(function (v) {
    try { show(v); } catch (e) { window.ofErrors.push(v + ": " + e); }
  });
  var st = el("div", { id: "of-selftest", "data-devices": devices.length });
  st.textContent = "selftest: " + checks.join(" ");
  document.body.appendChild(st);
} else {
  show(params.view || "overview");
}
window.ofRenderMs = Math.round(performance.now() - t1);
window.ofRendered = true;
})();
