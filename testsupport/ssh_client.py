"""What the real OpenSSH client reads from a configuration file: ``ssh -G``.

``ssh -G -F FILE ALIAS`` prints the options ``ssh`` would use for ``ALIAS`` after
reading only ``FILE``, without connecting. When no ``ssh`` client is installed,
``peer_unavailable`` fails the test under ``CI=true`` and skips otherwise.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .peers import peer_unavailable


def ssh_reads(config: Path, alias: str) -> dict[str, list[str]]:
    """Each option ``ssh`` would use for ``alias`` (lower-case keyword -> its values)."""
    binary = shutil.which("ssh")
    if binary is None:
        peer_unavailable("ssh", "no OpenSSH client (ssh) on PATH")
    done = subprocess.run(
        [binary, "-G", "-F", str(config), "--", alias],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, f"ssh -G {alias} failed: {done.stderr}"
    options: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        options.setdefault(key, []).append(value)
    return options
