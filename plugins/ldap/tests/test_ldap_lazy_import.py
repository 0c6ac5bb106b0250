"""ldap3 is imported at the first login or connection test, not when the app starts."""

from __future__ import annotations

from testsupport.lazyimports import loaded_after_start


def test_starting_an_app_with_the_pack_does_not_import_ldap3(template_db, tmp_path):
    loaded = loaded_after_start(
        "hostgate_ldap.plugin",
        template_db,
        tmp_path,
        # what the login route imports at the first login
        then="from hostgate_ldap.directory import user_filter; user_filter('uid', 'a*')",
    )
    assert "hostgate_ldap" in loaded.started
    assert "ldap3" not in loaded.started
    assert "pyasn1" not in loaded.started
    assert "ldap3" in loaded.then
