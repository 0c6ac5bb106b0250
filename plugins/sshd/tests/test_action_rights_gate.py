"""The SFTP gate's framing, byte by byte: requests cut anywhere are refused or passed whole.

The door tests run the real ``sftp`` client; here the same packets arrive one byte at a
time, with the server's packets under way, to pin the framing the real tests cannot
force (where a TCP read ends).
"""

from __future__ import annotations

import struct

from hostgate_sshd.action_rights import SftpGate, command_actions

OPEN, REMOVE, WRITE, STATUS, DATA = 3, 13, 6, 101, 103


def packet(kind: int, body: bytes) -> bytes:
    return struct.pack(">IB", len(body) + 1, kind) + body


def text(value: str) -> bytes:
    return struct.pack(">I", len(value)) + value.encode()


def test_requests_cut_into_bytes_are_refused_or_passed_whole() -> None:
    answers: list[bytes] = []
    refused: list[tuple[str, str]] = []
    gate = SftpGate(
        frozenset({"upload", "delete"}),
        refuse=lambda action, detail: refused.append((action, detail)),
        to_client=answers.append,
    )
    write_open = packet(OPEN, struct.pack(">I", 7) + text("/up.bin") + struct.pack(">II", 0x1A, 0))
    read_open = packet(OPEN, struct.pack(">I", 8) + text("/down.bin") + struct.pack(">II", 0x01, 0))
    remove = packet(REMOVE, struct.pack(">I", 9) + text("/gone"))
    write = packet(WRITE, struct.pack(">I", 10) + text("h") + struct.pack(">Q", 0) + text("x" * 40))
    stream = write_open + read_open + remove + write
    passed = b"".join(gate.from_client(stream[i : i + 1]) for i in range(len(stream)))
    assert passed == read_open + write
    assert refused == [("upload", "sftp /up.bin"), ("delete", "sftp /gone")]
    ids = [struct.unpack_from(">I", answer, 5)[0] for answer in answers]
    assert ids == [7, 9]
    for answer in answers:
        assert answer[4] == STATUS
        assert struct.unpack_from(">I", answer, 9)[0] == 3  # SSH_FX_PERMISSION_DENIED


def test_an_answer_waits_for_the_end_of_the_servers_packet_under_way() -> None:
    answers: list[bytes] = []
    gate = SftpGate(
        frozenset({"download"}), refuse=lambda action, detail: None, to_client=answers.append
    )
    data = packet(DATA, struct.pack(">I", 1) + text("y" * 100))
    assert gate.from_server(data[:20]) == data[:20]  # a DATA packet is under way
    read_open = packet(OPEN, struct.pack(">I", 2) + text("/f") + struct.pack(">II", 0x01, 0))
    assert gate.from_client(read_open) == b""
    assert answers == []  # not inside the server's packet
    rest = gate.from_server(data[20:])
    assert rest.startswith(data[20:]) and rest[len(data) - 20 :][4] == STATUS
    # at a boundary an answer goes at once
    assert gate.from_client(read_open) == b""
    assert len(answers) == 1


def test_what_a_transfer_command_does() -> None:
    assert command_actions("scp -t /srv/x") == {"upload"}
    assert command_actions("scp -r -f /srv/x") == {"download"}
    assert command_actions("rsync --server -logDtpre.iLsfxCIvu --delete . /srv/") == {
        "upload",
        "delete",
    }
    assert command_actions("rsync --server --sender -logDtpre.iLsfxCIvu . /srv/") == {"download"}
    assert command_actions("git-receive-pack '/srv/p.git'") == {"upload"}
    assert command_actions("git upload-pack '/srv/p.git'") == {"download"}
    assert command_actions("ls -la") == frozenset()
