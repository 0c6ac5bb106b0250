"""The scanners that find file events in relayed bytes, however the bytes are cut."""

from __future__ import annotations

import struct

import pytest
from hostgate_sshd.scanning import FileEvent
from hostgate_sshd.sftp_relay import SftpScanner
from hostgate_sshd.transfers import ScpScanner, WholeCommand, transfer_scanner


def string(value: bytes) -> bytes:
    return struct.pack(">I", len(value)) + value


def packet(kind: int, body: bytes) -> bytes:
    return struct.pack(">IB", len(body) + 1, kind) + body


def cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


@pytest.mark.parametrize("size", [1, 3, 7, 4096])
def test_sftp_upload_download_and_failures_whatever_the_chunks(size: int) -> None:
    data = b"x" * 5000
    requests = b"".join(
        [
            packet(1, struct.pack(">I", 3)),  # init
            packet(3, struct.pack(">I", 1) + string(b"/up") + struct.pack(">II", 0x1A, 0)),
            packet(6, struct.pack(">I", 2) + string(b"H1") + struct.pack(">Q", 0) + string(data)),
            packet(4, struct.pack(">I", 3) + string(b"H1")),
            packet(3, struct.pack(">I", 4) + string(b"/down") + struct.pack(">II", 1, 0)),
            packet(5, struct.pack(">I", 5) + string(b"H2") + struct.pack(">QI", 0, 32768)),
            packet(4, struct.pack(">I", 6) + string(b"H2")),
            packet(13, struct.pack(">I", 7) + string(b"/denied")),
            packet(14, struct.pack(">I", 8) + string(b"/dir") + struct.pack(">I", 0)),
        ]
    )
    responses = b"".join(
        [
            packet(2, struct.pack(">I", 3)),  # version
            packet(102, struct.pack(">I", 1) + string(b"H1")),
            packet(101, struct.pack(">II", 2, 0) + string(b"") + string(b"")),
            packet(101, struct.pack(">II", 3, 0) + string(b"") + string(b"")),
            packet(102, struct.pack(">I", 4) + string(b"H2")),
            packet(103, struct.pack(">I", 5) + string(b"y" * 1234)),
            packet(101, struct.pack(">II", 6, 0) + string(b"") + string(b"")),
            packet(101, struct.pack(">II", 7, 3) + string(b"denied") + string(b"")),
            packet(101, struct.pack(">II", 8, 0) + string(b"") + string(b"")),
        ]
    )
    scanner = SftpScanner()
    for part in cut(requests, size):
        assert scanner.from_client(part) == []
    events: list[FileEvent] = []
    for part in cut(responses, size):
        events.extend(scanner.from_server(part))
    assert events == [
        FileEvent("upload", "/up", 5000),
        FileEvent("download", "/down", 1234),
        FileEvent("mkdir", "/dir"),  # the refused remove is not an event
    ]


@pytest.mark.parametrize("size", [1, 5, 4096])
def test_scp_sender_lines_and_data_whatever_the_chunks(size: int) -> None:
    stream = (
        b"D0755 0 tree\n"
        b"T1700000000 0 1700000000 0\n"
        b"C0644 5 a.txt\nhello\x00"
        b"D0755 0 in\nC0600 0 empty\n\x00E\nE\n"
        b"C0644 3 top\nabc\x00"
    )
    scanner = ScpScanner.of(["-r", "-t", "--", "/srv/up"])
    assert scanner is not None
    events: list[FileEvent] = []
    for part in cut(stream, size):
        events.extend(scanner.from_client(part))
        assert scanner.from_server(b"\x00") == []  # the receiver's acks are not read
    assert events == [
        FileEvent("mkdir", "/srv/up/tree"),
        FileEvent("upload", "/srv/up/tree/a.txt", 5),
        FileEvent("mkdir", "/srv/up/tree/in"),
        FileEvent("upload", "/srv/up/tree/in/empty", 0),
        FileEvent("upload", "/srv/up/top", 3),
    ]


def test_scp_download_and_a_single_named_upload() -> None:
    download = ScpScanner.of(["-f", "/srv/data/file.bin"])
    assert download is not None
    assert download.from_server(b"C0644 4 file.bin\ndata\x00") == [
        FileEvent("download", "/srv/data/file.bin", 4)
    ]
    upload = ScpScanner.of(["-t", "/srv/renamed.bin"])
    assert upload is not None
    assert upload.from_client(b"C0644 2 local.bin\nhi\x00") == [
        FileEvent("upload", "/srv/renamed.bin", 2)
    ]


def test_which_commands_are_file_transfers() -> None:
    assert isinstance(transfer_scanner("scp -t -- /tmp"), ScpScanner)
    assert transfer_scanner("scp -t -f /tmp") is None  # not one of the two directions
    rsync = transfer_scanner("rsync --server --sender -logDtpre.iLsfxCIvu . /srv/x/")
    assert isinstance(rsync, WholeCommand) and rsync.action == "download"
    assert rsync.path == "/srv/x/"
    push = transfer_scanner("git-receive-pack '/srv/repo.git'")
    assert isinstance(push, WholeCommand) and (push.action, push.path) == (
        "upload",
        "/srv/repo.git",
    )
    fetch = transfer_scanner("git upload-pack '/srv/repo.git'")
    assert isinstance(fetch, WholeCommand) and fetch.action == "download"
    assert [event.size for event in fetch.finish(10, 99, 0)] == [99]
    assert fetch.finish(10, 99, 128) == []  # a failed command moved no files
    for other in ("uptime", "rsync --version", "ls 'unterminated", ""):
        assert transfer_scanner(other) is None
