"""Where a page's main thread spent its time, from a Chromium performance trace.

.venv/bin/python bench/studies/trace_summary.py TRACE.json [--top 25]

Reads a trace written by ``bench/studies/web_terminal.py --trace`` (Playwright's
``start_tracing``: the ``devtools.timeline`` events and the V8 sampling profiler).
Printed for each renderer main thread (``CrRendererMain``):

- busy: the wall time covered by its top-level tasks (``RunTask`` and friends),
  against the span of the trace;
- by category: the self time of the timeline events (``FunctionCall``,
  ``TimerFire``, ``FireAnimationFrame``, ``Layout``, ``Paint``...), nested
  events subtracted from their parents;
- by function: the V8 profiler's samples (self time), the function and its
  script (file:line), the ``(program)``/``(idle)``/``(garbage collector)``
  buckets included.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

TOP_LEVEL = {"RunTask", "ThreadControllerImpl::RunTask", "ThreadPool_RunTask"}


def main_threads(events: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [
        (event["pid"], event["tid"])
        for event in events
        if event.get("ph") == "M"
        and event.get("name") == "thread_name"
        and event.get("args", {}).get("name") == "CrRendererMain"
    ]


def self_times(events: list[dict[str, Any]]) -> tuple[dict[str, float], float, float]:
    """Self time per event name (ms), busy time of top-level tasks (ms), span (ms)."""
    complete = sorted(
        (e for e in events if e.get("ph") == "X" and "dur" in e),
        key=lambda e: (e["ts"], -e["dur"]),
    )
    totals: dict[str, float] = defaultdict(float)
    stack: list[list[Any]] = []  # [end, name, child time]
    busy = 0.0
    start = min((e["ts"] for e in complete), default=0)
    end = max((e["ts"] + e["dur"] for e in complete), default=0)

    def pop() -> None:
        item_end, name, children, dur = stack.pop()
        totals[name] += (dur - children) / 1000

    for event in complete:
        while stack and stack[-1][0] <= event["ts"]:
            pop()
        if stack:
            stack[-1][2] += event["dur"]
        elif event["name"] in TOP_LEVEL:
            busy += event["dur"]
        stack.append([event["ts"] + event["dur"], event["name"], 0, event["dur"]])
    while stack:
        pop()
    return totals, busy / 1000, (end - start) / 1000


def profile(events: list[dict[str, Any]], pid: int, tid: int) -> dict[str, float]:
    """Self time per function (ms) from the sampling profiler's chunks on this thread."""
    nodes: dict[int, str] = {}
    totals: dict[str, float] = defaultdict(float)
    profile_ids = {
        e["id"]
        for e in events
        if e.get("name") == "Profile" and e["pid"] == pid and e["tid"] == tid
    }
    for event in events:
        if event.get("name") != "ProfileChunk" or event["pid"] != pid:
            continue
        if profile_ids and event.get("id") not in profile_ids:
            continue
        data = event.get("args", {}).get("data", {})
        cpu = data.get("cpuProfile", {})
        for node in cpu.get("nodes", []):
            frame = node.get("callFrame", {})
            url = frame.get("url", "").rsplit("/", 1)[-1]
            where = f" {url}:{frame.get('lineNumber', -1) + 1}" if url else ""
            nodes[node["id"]] = f"{frame.get('functionName') or '(anonymous)'}{where}"
        for sample, delta in zip(cpu.get("samples", []), data.get("timeDeltas", []), strict=False):
            totals[nodes.get(sample, "?")] += delta / 1000
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("trace", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    data = json.loads(args.trace.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    for pid, tid in main_threads(events):
        mine = [e for e in events if e.get("pid") == pid and e.get("tid") == tid]
        totals, busy, span = self_times(mine)
        if span < 1:
            continue
        print(f"renderer main thread {pid}/{tid}: span {span:.0f} ms, busy {busy:.0f} ms")
        print("  by category (self ms):")
        for name, ms in sorted(totals.items(), key=lambda item: -item[1])[: args.top]:
            print(f"    {ms:9.1f}  {name}")
        functions = profile(events, pid, tid)
        if functions:
            total = sum(functions.values())
            print(f"  by function (self ms of {total:.0f} sampled):")
            for name, ms in sorted(functions.items(), key=lambda item: -item[1])[: args.top]:
                print(f"    {ms:9.1f}  {name}")


if __name__ == "__main__":
    main()
