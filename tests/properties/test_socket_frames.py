"""Terminal socket frames: any text a client sends is raw input or a well-formed control.

Regression: ``{"type":"resize","cols":Infinity}`` (Python's JSON reader accepts
Infinity and NaN) raised OverflowError in ``size_of`` and ended the terminal.
"""

from __future__ import annotations

import json
from typing import Any

from hostgate.adapters import TerminalSize
from hostgate.ws.frames import MAX_DIMENSION, control_message, size_of
from hypothesis import example, given
from hypothesis import strategies as st

NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=4),
)


@example('{"type":"resize","cols":Infinity,"rows":NaN}')
@example('{"type":"resize","cols":-Infinity,"rows":24}')
@given(
    st.one_of(
        st.text(max_size=60),
        st.builds(
            lambda cols, rows: json.dumps({"type": "resize", "cols": cols, "rows": rows}),
            NUMBERS,
            NUMBERS,
        ),
    )
)
def test_any_text_frame_is_raw_input_or_a_control(frame: str) -> None:
    message = control_message(frame)
    if message is None:
        return
    assert isinstance(message["type"], str)
    size = size_of(message)
    if size is not None:
        assert isinstance(size, TerminalSize)
        assert 1 <= size.cols <= MAX_DIMENSION and 1 <= size.rows <= MAX_DIMENSION


@given(st.integers(1, MAX_DIMENSION), st.integers(1, MAX_DIMENSION))
def test_valid_sizes_are_read_back(cols: int, rows: int) -> None:
    message: Any = control_message(json.dumps({"type": "resize", "cols": cols, "rows": rows}))
    assert size_of(message) == TerminalSize(cols=cols, rows=rows)
