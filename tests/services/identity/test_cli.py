"""Recovery CLI: `hostgate setup`, `hostgate user ...`, `hostgate audit verify` (subprocesses),
and the chain walk's verdicts for edited, inserted and deleted entries."""

import json
import sqlite3

from hostgate.db.models.audit import AuditEntry
from sqlalchemy import delete, update
from sqlmodel import col

KEY = "5a" * 32


def test_recovery_commands(run_cli, tmp_path):
    """Through the installed entry point, as an admin would run them."""
    env = {"HOSTGATE_DATA_DIR": str(tmp_path), "HOSTGATE_ENCRYPTION_KEY": KEY}
    code, out, err = run_cli(
        "setup", "--username", "root", env={**env, "HOSTGATE_ADMIN_PASSWORD": "root-password"}
    )
    assert code == 0, err
    assert "created admin root" in out
    code, out, err = run_cli(
        "user", "create", "bob", "--role", "admin", env={**env, "HOSTGATE_PASSWORD": "bob-password"}
    )
    assert code == 0, err
    assert "created user bob (role admin" in out
    code, out, err = run_cli("user", "list", "--json", env=env)
    assert code == 0, err
    users = {u["username"]: u for u in json.loads(out)["users"]}
    assert set(users) == {"root", "bob"}
    assert users["root"]["role"] == "admin" and users["bob"]["role"] == "admin"
    code, out, err = run_cli("audit", "verify", env=env)
    assert code == 0, err
    assert "2 entries verified" in out


def test_reset_password_and_unlock(tmp_path, monkeypatch, capsys):
    """The same entry point in-process (no new interpreter per command)."""
    from hostgate.cli import main

    monkeypatch.setenv("HOSTGATE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HOSTGATE_ENCRYPTION_KEY", KEY)
    monkeypatch.setenv("HOSTGATE_PASSWORD", "bob-password")
    db = tmp_path / "hostgate.db"
    assert main(["user", "create", "bob"]) == 0
    with sqlite3.connect(db) as conn:
        (old_hash,) = conn.execute(
            "SELECT password_hash FROM users WHERE username='bob'"
        ).fetchone()
        conn.execute(
            "UPDATE users SET failed_login_count=5, locked_until='2999-01-01 00:00:00' "
            "WHERE username='bob'"
        )
    monkeypatch.setenv("HOSTGATE_PASSWORD", "new-bob-password")
    assert main(["user", "reset-password", "BOB"]) == 0
    assert main(["user", "unlock", "bob"]) == 0
    assert "bob unlocked" in capsys.readouterr().out
    assert main(["user", "suspend", "bob"]) == 0
    assert "bob suspended" in capsys.readouterr().out
    assert main(["user", "list"]) == 0
    listing = capsys.readouterr().out
    assert "bob" in listing and "suspended" in listing
    assert main(["user", "resume", "bob"]) == 0
    assert "bob can sign in again" in capsys.readouterr().out
    with sqlite3.connect(db) as conn:
        new_hash, count, locked, suspended = conn.execute(
            "SELECT password_hash, failed_login_count, locked_until, suspended FROM users "
            "WHERE username='bob'"
        ).fetchone()
        types = [r[0] for r in conn.execute("SELECT event_type FROM audit_log ORDER BY seq")]
    assert new_hash != old_hash and new_hash.startswith("$argon2id$")
    assert count == 0 and locked is None and suspended == 0
    assert types == [
        "user.created",
        "user.password_reset",
        "user.unlocked",
        "user.suspended",
        "user.resumed",
    ]


def test_refusals_and_tamper_report(tmp_path, monkeypatch, capsys):
    """The failure paths, in-process (the same entry point, without a new interpreter)."""
    from hostgate.cli import main

    monkeypatch.setenv("HOSTGATE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HOSTGATE_ENCRYPTION_KEY", KEY)
    monkeypatch.delenv("HOSTGATE_PASSWORD", raising=False)
    secret = tmp_path / "admin-password"
    secret.write_text("root-password\n")
    assert main(["setup", "--username", "root", "--password-file", str(secret)]) == 0
    assert main(["setup", "--username", "again", "--password", "long-enough"]) == 1
    assert "Setup already completed" in capsys.readouterr().err
    assert main(["user", "create", "x", "--password", "short"]) == 1
    assert "at least 8 characters" in capsys.readouterr().err
    assert main(["user", "unlock", "nobody"]) == 1
    assert "no user named 'nobody'" in capsys.readouterr().err
    assert main(["user", "create", "y", "--role", "ghost", "--password", "long-enough"]) == 1
    assert "Unknown role" in capsys.readouterr().err
    assert main(["audit", "verify"]) == 0
    with sqlite3.connect(tmp_path / "hostgate.db") as conn:
        conn.execute("UPDATE audit_log SET target='someone-else' WHERE seq=1")
    assert main(["audit", "verify"]) == 1
    assert "seq 1 (user.setup) was edited" in capsys.readouterr().err


async def test_verify_names_the_first_tampered_entry(kernel, admin):
    for i in range(6):
        await kernel.audit.record("demo.event", actor=None, target=f"t{i}")
    assert (await kernel.audit.verify_chain()).ok

    async def change(statement):
        async with kernel.db.session() as session:
            await session.exec(statement)
            await session.commit()

    # edited: content changes, stored hash kept
    await change(update(AuditEntry).where(col(AuditEntry.seq) == 3).values(target="forged"))
    result = await kernel.audit.verify_chain()
    assert not result.ok and result.seq == 3 and "edited" in result.problem
    await change(update(AuditEntry).where(col(AuditEntry.seq) == 3).values(target="t2"))
    assert (await kernel.audit.verify_chain()).ok

    # deleted: a gap in the sequence
    await change(delete(AuditEntry).where(col(AuditEntry.seq) == 4))
    result = await kernel.audit.verify_chain()
    assert not result.ok and result.seq == 5 and "deleted" in result.problem

    # deleted and renumbered: the link breaks
    await change(update(AuditEntry).where(col(AuditEntry.seq) == 5).values(seq=4))
    result = await kernel.audit.verify_chain()
    assert not result.ok and result.seq == 4 and "does not link" in result.problem


async def test_verify_detects_an_inserted_entry(kernel, admin):
    for i in range(3):
        await kernel.audit.record("demo.event", actor=None, target=f"t{i}")
    async with kernel.db.session() as session:
        rows = list(
            (
                await session.exec(
                    AuditEntry.__table__.select().order_by(AuditEntry.__table__.c.seq)
                )
            ).all()
        )
        # shift the last entry up and slip a forged one in at its place, linked correctly
        last = rows[-1]
        await session.exec(
            update(AuditEntry).where(col(AuditEntry.seq) == last.seq).values(seq=last.seq + 1)
        )
        forged = AuditEntry(
            seq=last.seq,
            event_type="auth.login",
            target="attacker",
            prev_hash=rows[-2].hash,
            hash="0" * 64,
        )
        session.add(forged)
        await session.commit()
    result = await kernel.audit.verify_chain()
    assert not result.ok and result.seq == last.seq and "inserted" in result.problem


def test_setup_holds_the_first_admin_to_the_password_rule(tmp_path, monkeypatch, capsys):
    """`hostgate setup` refuses a very weak password as the API and the browser do."""
    from hostgate.cli import main

    monkeypatch.setenv("HOSTGATE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HOSTGATE_ENCRYPTION_KEY", KEY)
    monkeypatch.setenv("HOSTGATE_ADMIN_PASSWORD", "password")
    assert main(["setup", "--username", "root"]) == 1
    assert "too easy to guess" in capsys.readouterr().err
    with sqlite3.connect(tmp_path / "hostgate.db") as conn:
        assert conn.execute("SELECT count(*) FROM users").fetchone() == (0,)
    monkeypatch.setenv("HOSTGATE_ADMIN_PASSWORD", "root-password")
    assert main(["setup", "--username", "root"]) == 0


def test_invite_and_must_change_through_the_cli(tmp_path, monkeypatch, capsys):
    """``user invite`` prints a link that works once; ``--must-change`` on create and
    reset-password makes the user choose their own password at the next sign-in."""
    import argparse

    from hostgate.cli import main
    from hostgate.commands.common import with_kernel
    from hostgate.principals import ClientInfo

    monkeypatch.setenv("HOSTGATE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HOSTGATE_ENCRYPTION_KEY", KEY)
    monkeypatch.setenv("HOSTGATE_PASSWORD", "temporary-password")
    assert main(["user", "invite", "nina", "--hours", "0.5"]) == 1
    assert "expiresInHours must be between 1 and 720" in capsys.readouterr().err
    argv = ["user", "invite", "nina", "--role", "admin", "--url", "https://gate.example/"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "invited user nina (role admin" in out
    link = next(line for line in out.splitlines() if line.startswith("https://"))
    assert link.startswith("https://gate.example/invite#")
    assert main(["user", "invite", "nina"]) == 1  # the name is taken
    assert main(["user", "invite", "omar"]) == 0
    path = capsys.readouterr().out.splitlines()
    assert any(line.startswith("/invite#") for line in path)
    assert "pass --url" in path[-1]

    async def accept(kernel):
        secret = link.removeprefix("https://gate.example/invite#")
        signed = await kernel.invites.accept(secret, "ninas-own-password", ClientInfo())
        return signed.username

    assert with_kernel(argparse.Namespace(), accept) == "nina"

    assert main(["user", "create", "carl", "--must-change"]) == 0
    assert "choose a new password at their first sign-in" in capsys.readouterr().out
    assert main(["user", "create", "dora"]) == 0
    assert main(["user", "reset-password", "dora", "--must-change"]) == 0
    assert "at their next sign-in" in capsys.readouterr().out
    with sqlite3.connect(tmp_path / "hostgate.db") as conn:
        flags = dict(conn.execute("SELECT username, must_change_password FROM users"))
        used = conn.execute("SELECT used_at FROM user_invites ORDER BY created_at").fetchall()
    assert flags == {"nina": 0, "omar": 0, "carl": 1, "dora": 1}
    assert used[0][0] is not None and used[1][0] is None  # nina's link is spent, omar's open
