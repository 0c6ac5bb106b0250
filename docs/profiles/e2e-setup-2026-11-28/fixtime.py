"""Per-fixture setup time (own time, excluding nested fixtures), written at session end."""
import json, os, time
from collections import defaultdict

_stack = []
_own = defaultdict(float)
_count = defaultdict(int)
_cpu_own = defaultdict(float)

import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    start = time.perf_counter()
    _stack.append(0.0)
    yield
    took = time.perf_counter() - start
    nested = _stack.pop()
    _own[fixturedef.argname] += took - nested
    _count[fixturedef.argname] += 1
    if _stack:
        _stack[-1] += took

def pytest_sessionfinish(session):
    out = os.environ.get("FIXTIME_OUT", "/tmp/e2emod12/fixtime.json")
    rows = sorted(((k, round(v, 2), _count[k]) for k, v in _own.items()), key=lambda r: -r[1])
    with open(out, "w") as f:
        json.dump(rows, f, indent=0)

import subprocess
_serves = [0]
_orig_init = subprocess.Popen.__init__
def _counting_init(self, args, *a, **k):
    if isinstance(args, (list, tuple)) and "hostgate" in map(str, args) and "serve" in map(str, args):
        _serves[0] += 1
    _orig_init(self, args, *a, **k)
subprocess.Popen.__init__ = _counting_init

_prev_finish = pytest_sessionfinish
def pytest_sessionfinish(session):
    _prev_finish(session)
    out = os.environ.get("FIXTIME_OUT", "/tmp/e2emod12/fixtime.json")
    with open(out + ".serves", "w") as f:
        f.write(str(_serves[0]) + "\n")
