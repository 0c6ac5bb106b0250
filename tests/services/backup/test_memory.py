"""Export and import stream: memory does not grow with the size of the recordings."""

from __future__ import annotations

import os
import tracemalloc

from tests.services.backup.support import KEY_A, export_to, restore_from, running

MIB = 1024 * 1024
FILES = 4
FILE_SIZE = 12 * MIB
BOUND = 16 * MIB


async def test_export_and_import_of_large_recordings_stay_flat(tmp_path, instance_config):
    async with running(instance_config("a", KEY_A)) as a:
        for number in range(FILES):
            (a.recordings / f"big-{number}.cast").write_bytes(os.urandom(FILE_SIZE))
        archive = tmp_path / "big.geb"
        tracemalloc.start()
        try:
            await export_to(a.kernel, archive)
            export_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
            result = await restore_from(a.kernel, archive)
            import_peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert archive.stat().st_size > FILES * FILE_SIZE
        assert result.recordings_restored == FILES
        assert (a.recordings / "big-3.cast").stat().st_size == FILE_SIZE
    assert export_peak < BOUND, f"export held {export_peak / MIB:.1f} MiB"
    assert import_peak < BOUND, f"import held {import_peak / MIB:.1f} MiB"
