#!/usr/bin/env python3
"""Checks the DOM Chromium rendered from `oneflow inspect --format=html` against the
plan's `oneflow inspect --format=json` (tools/cli/inspect_html_browser_test.sh).

usage: inspect_html_browser_check.py PLAN.json DEFAULT.dom SELFTEST.dom

DEFAULT.dom is the page as it opens; SELFTEST.dom the page opened at #selftest, which
renders every view of every device and checks each device's live-bytes curve against
its lower bound. Prints one line per failed check and exits 1 if there is any.
"""
import json
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
        "source", "track", "wbr"}


class Dom(HTMLParser):
    """Elements as (tag, attrs, text, ancestors' attrs); enough to find rows and cells."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []  # [tag, attrs, text parts]
        self.elements = []

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        self.stack.append([tag, dict(attrs), []])

    def handle_endtag(self, tag):
        # Chromium's serialization is well formed: pop to the matching tag.
        while self.stack:
            top = self.stack.pop()
            text = "".join(top[2])
            if self.stack:
                self.stack[-1][2].append(text)
            self.elements.append((top[0], top[1], text, [dict(e[1]) for e in self.stack]))
            if top[0] == tag:
                break

    def handle_data(self, data):
        if self.stack:
            self.stack[-1][2].append(data)

    def find(self, tag=None, **attrs):
        out = []
        for t, a, text, ancestors in self.elements:
            if tag and t != tag:
                continue
            if all(a.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                out.append((a, text, ancestors))
        return out


def parse(path):
    dom = Dom()
    with open(path, encoding="utf-8") as f:
        dom.feed(f.read())
    return dom


def fmt_bytes(b):
    """As tools/cli/plan_format.cc FormatBytes."""
    for name, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(b) >= size:
            return "%.2f %s (%d B)" % (b / size, name, b)
    return "%d B" % b


def main():
    plan_json, default_dom, selftest_dom = sys.argv[1:4]
    with open(plan_json, encoding="utf-8") as f:
        plan = json.load(f)
    failures = []
    doms = {"default": parse(default_dom), "selftest": parse(selftest_dom)}

    for name, dom in doms.items():
        status = dom.find("div", id="of-status")
        if len(status) != 1:
            failures.append("%s: no #of-status marker (did the page's first script run?)" % name)
            continue
        attrs, text, _ = status[0]
        if attrs.get("data-errors") != "0":
            failures.append("%s: script errors: %s" % (name, text))
        if attrs.get("data-rendered") != "yes":
            failures.append("%s: the main script did not finish: %s" % (name, text))

    # Every device, with its memory peak, in the totals table of the default view.
    dom = doms["default"]
    devices = plan["devices"]
    rows = dom.find("tr", **{"class": "device-row"})
    if len(rows) != plan["num_devices"] or len(rows) != len(devices):
        failures.append("default: %d device rows, the plan has %d devices" % (len(rows), plan["num_devices"]))
    by_id = {a.get("data-id"): text for a, text, _ in rows}
    peaks = {}
    for a, text, ancestors in dom.find("span", **{"class": "peak"}):
        row = [x for x in ancestors if x.get("class") == "device-row"]
        if row:
            peaks[row[-1].get("data-id")] = (a.get("data-bytes"), text)
    for device in devices:
        if device["device"] not in by_id:
            failures.append("default: device %s is not in the totals" % device["device"])
            continue
        want = (str(device["peak_bytes"]), fmt_bytes(device["peak_bytes"]))
        if peaks.get(device["device"]) != want:
            failures.append("default: device %s peak %s, want %s" % (device["device"], peaks.get(device["device"]), want))

    # Every boxing with its bytes per iteration, and each device's memory checked.
    dom = doms["selftest"]
    rows = dom.find("tr", **{"class": "boxing-row"})
    if len(rows) != len(plan["boxings"]):
        failures.append("selftest: %d boxing rows, the plan has %d boxings" % (len(rows), len(plan["boxings"])))
    cells = {}
    for a, text, ancestors in dom.find("span", **{"class": "bytes"}):
        row = [x for x in ancestors if x.get("class") == "boxing-row"]
        if row:
            cells[row[-1].get("data-boxing")] = (a.get("data-bytes"), text)
    for boxing in plan["boxings"]:
        want = (str(boxing["bytes_per_iter"]), fmt_bytes(boxing["bytes_per_iter"]))
        if cells.get(str(boxing["id"])) != want:
            failures.append("selftest: boxing %d bytes %s, want %s" % (boxing["id"], cells.get(str(boxing["id"])), want))
    selftest = dom.find("div", id="of-selftest")
    if len(selftest) != 1:
        failures.append("selftest: no #of-selftest")
    else:
        attrs, text, _ = selftest[0]
        want = "selftest: " + " ".join("%s:ok" % d["device"] for d in devices)
        if attrs.get("data-devices") != str(len(devices)) or text.strip() != want:
            failures.append("selftest: %r, want %r (each device's live bytes peak at its lower bound)" % (text, want))
    memory = dom.find("div", **{"class": "card mono memory-summary"})
    last = devices[-1]
    if len(memory) != 1 or memory[0][0].get("data-peak") != str(last["peak_bytes"]) or \
            memory[0][0].get("data-lower-bound") != str(last["lower_bound_bytes"]):
        failures.append("selftest: the memory view of the last device does not show its peak and lower bound: %r" %
                        ([m[0] for m in memory],))

    for failure in failures:
        print("FAIL: " + failure)
    if failures:
        return 1
    print("checked %d devices (peaks), %d boxings (bytes), 0 script errors" % (len(devices), len(plan["boxings"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
