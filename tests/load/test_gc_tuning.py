"""``hostgate serve`` freezes its start-up objects and collects garbage less often.

Regression: under the load run, full collections over every pack's start-up
objects paused the event loop for up to half a second every few seconds.
"""

from __future__ import annotations

import gc

from hostgate.commands.serve import GC_THRESHOLDS, tune_garbage_collector


def test_start_up_objects_are_frozen_and_thresholds_raised() -> None:
    thresholds = gc.get_threshold()
    try:
        tune_garbage_collector()
        assert gc.get_freeze_count() > 10_000
        assert gc.get_threshold() == GC_THRESHOLDS
        assert GC_THRESHOLDS[0] > thresholds[0]
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
