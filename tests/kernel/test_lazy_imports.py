"""The terminal emulator (pyte) and the QR code maker load where first used, not at start."""

from __future__ import annotations

from testsupport.lazyimports import loaded_after_start

FIRST_USES = """
from hostgate.services.identity.mfa import qr_data_url
from hostgate.services.sessions.terminal_lines import TypedLine
from hostgate.services.sessions.terminal_screen import repaint
assert qr_data_url("otpauth://totp/x").startswith("data:image/png;base64,")
TypedLine(80, "$ ")
assert repaint(b"\\x1b[31mred", 80, 24).startswith(b"\\x1bc")
"""


def test_an_app_starts_and_answers_without_pyte_or_qrcode(template_db, tmp_path):
    loaded = loaded_after_start("", template_db, tmp_path, then=FIRST_USES)
    assert "hostgate" in loaded.started
    assert not {"pyte", "wcwidth", "qrcode"} & loaded.started
    assert {"pyte", "qrcode"} <= loaded.then
