"""The jump-net fixture's numbers: one holder at a time across processes, freed by dying."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from testsupport.jumpnet import NUMBERS, claim_number
from testsupport.peers import ROOT_DIR

HOLDER = """
import sys
from pathlib import Path
from testsupport.jumpnet import claim_number
claim = claim_number(Path(sys.argv[1]))
print(claim.number, flush=True)
sys.stdin.read()  # hold the claim until the parent closes stdin
"""


def _holder(directory: Path) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory)],
        cwd=ROOT_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline())


def test_two_claims_in_one_process_take_different_numbers(tmp_path):
    first, second = claim_number(tmp_path), claim_number(tmp_path)
    try:
        assert first.number != second.number
        assert {first.number, second.number} <= set(NUMBERS)
    finally:
        first.release()
        second.release()
    again = claim_number(tmp_path)
    again.release()
    assert again.number == first.number  # released: the number is free again


def test_a_number_another_process_holds_is_not_taken_until_it_dies(tmp_path):
    process, held = _holder(tmp_path)
    try:
        mine = claim_number(tmp_path)
        mine.release()
        assert mine.number != held
    finally:
        assert process.stdin is not None
        process.stdin.close()  # the holder exits; its lock goes with it
        process.wait(timeout=30)
    assert (tmp_path / f"{held}.lock").exists()  # the file stays, and blocks nobody
    after = claim_number(tmp_path)
    after.release()
    assert after.number == held


def test_a_number_whose_interfaces_exist_is_skipped_and_left_alone(tmp_path):
    existing = {1, 2}  # e.g. a killed run's veth pair, or a run that made no claims
    claim = claim_number(tmp_path, in_use=existing.__contains__)
    claim.release()
    assert claim.number == 3
