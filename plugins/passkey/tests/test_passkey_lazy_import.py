"""py_webauthn is imported when a ceremony first needs it, not when the app starts."""

from __future__ import annotations

from testsupport.lazyimports import loaded_after_start

# the first step of a passkey login: read the credential id the browser names
READ_ID = """
from hostgate_passkey.ceremonies import credential_id_of
assert credential_id_of({"rawId": "AAAA"}) == "AAAA"
"""


def test_starting_an_app_with_the_pack_does_not_import_webauthn(template_db, tmp_path):
    loaded = loaded_after_start("hostgate_passkey.plugin", template_db, tmp_path, then=READ_ID)
    assert "hostgate_passkey" in loaded.started
    assert "webauthn" not in loaded.started
    assert "OpenSSL" not in loaded.started
    assert "webauthn" in loaded.then
