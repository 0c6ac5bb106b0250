"""The door's own leg offers AES (GCM and CTR), never chacha20-poly1305.

SSH picks the first cipher of the client's list the server also has, and OpenSSH lists
chacha20-poly1305 first: asyncssh builds its ChaCha20 ciphers anew for every packet,
so the door leaves it out and OpenSSH's clients land on AES (about a third less gateway
CPU per GiB moved, docs/performance-log/2026-12-lab-notes.md).
"""

from __future__ import annotations

import asyncssh
import pytest

from plugins.sshd.tests.door import door_of, known_hosts, make_key, register_key, run_ssh
from plugins.sshd.tests.test_certificates import box


async def test_openssh_with_its_default_ciphers_lands_on_aes(
    client, kernel, make_user, make_connection, sshd, tmp_path
):
    user = await make_user("alice")
    await box(make_connection, user, sshd)
    key = make_key(tmp_path)
    await register_key(client, user, key)
    hosts = await known_hosts(client, user, tmp_path)

    done = await run_ssh(door_of(kernel).port, "alice:box", key, hosts, "echo aes", options=("-v",))

    assert done.code == 0, done.stderr
    assert done.stdout.strip() == "aes"
    chosen = [line for line in done.stderr.splitlines() if " cipher: " in line]
    assert len(chosen) == 2, done.stderr
    # OpenSSH's own order after chacha20: aes128-ctr (with an ETM MAC), then AES-GCM
    assert all(line.split(" cipher: ")[1].startswith("aes128-") for line in chosen), chosen


async def test_a_client_offering_only_chacha20_is_refused_during_key_exchange(kernel):
    with pytest.raises(asyncssh.KeyExchangeFailed):
        await asyncssh.connect(
            "127.0.0.1",
            door_of(kernel).port,
            username="alice:box",
            known_hosts=None,
            agent_path=None,
            client_keys=[],
            encryption_algs=["chacha20-poly1305@openssh.com"],
        )
