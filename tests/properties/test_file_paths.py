"""Paths of the file routes: handed to the adapter verbatim, or refused; never used locally.

A spy protocol records every path its adapter is given. For any text sent as a
path (body or query), the route either answers 400 in the error shape and the
adapter sees nothing (NUL, empty where a path is required, over 4096 bytes, not
encodable), or the adapter receives exactly that text. A directory of real files
named by the generated paths stays untouched throughout.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from hostgate import ConnectionTarget, ProtocolSpec, RemoteEntry, hookimpl
from hostgate.errors import InvalidInput
from hostgate.services.sessions.remote_file_pool import MAX_PATH_BYTES, check_not_root, check_path
from hypothesis import assume, given
from hypothesis import strategies as st

SEEN: list[tuple[str, tuple[str, ...]]] = []
SENTINEL_DIR = Path(os.environ.get("TMPDIR", "/tmp")) / f"hg-path-sentinel-{os.getpid()}"


class SpyFiles:
    """Records the paths of every call; succeeds without doing anything."""

    operations = frozenset(
        {"list", "download", "upload", "mkdir", "delete", "rename", "stat", "chmod", "copy"}
    )

    async def list(self, path: str) -> list[RemoteEntry]:
        SEEN.append(("list", (path,)))
        return []

    async def stat(self, path: str) -> RemoteEntry:
        SEEN.append(("stat", (path,)))
        return RemoteEntry(name="f", is_dir=False, size=3)

    def read(self, path: str, offset: int = 0, length: int | None = None) -> AsyncIterator[bytes]:
        SEEN.append(("read", (path,)))
        return self._spy(length)

    async def _spy(self, length: int | None) -> AsyncIterator[bytes]:
        yield b"spy"[: 3 if length is None else length]

    async def write(self, path: str, chunks: AsyncIterator[bytes]) -> int:
        SEEN.append(("write", (path,)))
        return sum([len(chunk) async for chunk in chunks])

    async def mkdir(self, path: str) -> None:
        SEEN.append(("mkdir", (path,)))

    async def remove(self, path: str) -> None:
        SEEN.append(("remove", (path,)))

    async def rename(self, old_path: str, new_path: str) -> None:
        SEEN.append(("rename", (old_path, new_path)))

    async def chmod(self, path: str, mode: int) -> None:
        SEEN.append(("chmod", (path,)))

    async def copy(self, src_path: str, dest_path: str) -> None:
        SEEN.append(("copy", (src_path, dest_path)))

    async def close(self) -> None:
        return None


async def open_spy(kernel: Any, target: ConnectionTarget) -> SpyFiles:
    return SpyFiles()


class SpyPack:
    @hookimpl
    def register_protocols(self) -> Sequence[ProtocolSpec]:
        return [
            ProtocolSpec(
                name="pathspy",
                default_port=1,
                open_files=open_spy,
                stat_fields=("size", "isDirectory"),
            )
        ]

    @hookimpl
    def register_permissions(self) -> dict[str, list[str]]:
        return {"connections": ["connections.use_pathspy"]}


@pytest.fixture
def plugins() -> list[object]:
    return [SpyPack()]


@pytest.fixture
def sentinel() -> Any:
    SENTINEL_DIR.mkdir(exist_ok=True)
    (SENTINEL_DIR / "keep.txt").write_text("untouched")
    (SENTINEL_DIR / "sub").mkdir(exist_ok=True)
    yield SENTINEL_DIR
    for path in sorted(SENTINEL_DIR.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    SENTINEL_DIR.rmdir()


def snapshot(root: Path) -> dict[str, Any]:
    return {
        str(p.relative_to(root)): (
            p.is_dir(),
            p.read_bytes() if p.is_file() else None,
            p.stat().st_mtime_ns,
        )
        for p in sorted(root.rglob("*"))
    }


LOCAL_LOOKING = st.sampled_from(
    [
        str(SENTINEL_DIR / "keep.txt"),
        str(SENTINEL_DIR / "sub"),
        str(SENTINEL_DIR / "new"),
        f"{SENTINEL_DIR}/../{SENTINEL_DIR.name}/keep.txt",
        "../../../../etc/passwd",
        "/etc/hostname",
        "~/.ssh/id_rsa",
        "C:\\Windows\\win.ini",
        "a/./b/../c",
        ".",
        "",
        "/",
    ]
)
PATHS = st.one_of(
    LOCAL_LOOKING,
    st.text(max_size=40),
    st.text(st.characters(codec="utf-8"), min_size=4000, max_size=4200),
    st.builds(lambda a, b: a + "\x00" + b, st.text(max_size=5), st.text(max_size=5)),
)
BODY_ROUTES = {
    "list": ("list", "path"),
    "stat": ("stat", "path"),
    "mkdir": ("mkdir", "path"),
    "chmod": ("chmod", "path"),
}
QUERY_ROUTES = {"download": "read", "file": "remove", "upload": "write"}


def expected_refusal(path: str, *, allow_empty: bool, deleting: bool = False) -> bool:
    try:
        check_path(path, allow_empty=allow_empty)
        if deleting:
            check_not_root(path)
    except InvalidInput:
        return True
    return False


@given(path=PATHS)
def test_check_path_refuses_exactly_nul_empty_oversize_and_unencodable(path: str) -> None:
    try:
        encoded: bytes | None = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        encoded = None
    bad = "\x00" in path or not path or encoded is None or len(encoded) > MAX_PATH_BYTES
    if bad:
        with pytest.raises(InvalidInput):
            check_path(path)
    else:
        assert check_path(path) == path


async def _post_json(client: Any, url: str, body: dict[str, Any], headers: Any) -> Any:
    return await client.post(
        url, data=json.dumps(body), headers={**headers, "Content-Type": "application/json"}
    )


@given(route=st.sampled_from(sorted(BODY_ROUTES)), path=PATHS)
async def test_body_paths_reach_the_adapter_verbatim_or_are_refused(
    client: Any, admin: Any, make_connection: Any, sentinel: Path, route: str, path: str
) -> None:
    connection = await make_connection(admin, "pathspy", name="spy")
    before = snapshot(sentinel)
    SEEN.clear()
    body: dict[str, Any] = {"path": path}
    if route == "chmod":
        body["mode"] = 0o644
    response = await _post_json(
        client, f"/api/v1/pathspy/{connection.id}/{route}", body, admin.headers
    )
    if expected_refusal(path, allow_empty=route == "list"):
        assert response.status_code == 400
        assert set(await response.get_json()) == {"error", "code"}
        assert SEEN == []
    else:
        assert response.status_code == 200, await response.get_data()
        operation, _ = BODY_ROUTES[route]
        assert [(operation, (path or ".",))] == SEEN
    assert snapshot(sentinel) == before


@given(route=st.sampled_from(["rename", "copy"]), old=PATHS, new=PATHS)
async def test_two_path_routes_check_both_paths(
    client: Any, admin: Any, make_connection: Any, sentinel: Path, route: str, old: str, new: str
) -> None:
    connection = await make_connection(admin, "pathspy", name="spy")
    before = snapshot(sentinel)
    SEEN.clear()
    names = ("oldPath", "newPath") if route == "rename" else ("srcPath", "destPath")
    response = await _post_json(
        client,
        f"/api/v1/pathspy/{connection.id}/{route}",
        {names[0]: old, names[1]: new},
        admin.headers,
    )
    if expected_refusal(old, allow_empty=False) or expected_refusal(new, allow_empty=False):
        assert response.status_code == 400
        assert SEEN == []
    else:
        assert response.status_code == 200, await response.get_data()
        assert [(route, (old, new))] == SEEN
    assert snapshot(sentinel) == before


@given(route=st.sampled_from(sorted(QUERY_ROUTES)), path=PATHS)
async def test_query_paths_reach_the_adapter_verbatim_or_are_refused(
    client: Any, admin: Any, make_connection: Any, sentinel: Path, route: str, path: str
) -> None:
    try:
        query = urlencode({"path": path})
    except UnicodeEncodeError:
        assume(False)
    connection = await make_connection(admin, "pathspy", name="spy")
    before = snapshot(sentinel)
    SEEN.clear()
    url = f"/api/v1/pathspy/{connection.id}/{route}?{query}"
    if route == "download":
        response = await client.get(url, headers=admin.headers)
    elif route == "file":
        response = await client.delete(url, headers=admin.headers)
    else:
        response = await client.post(url, data=b"payload", headers=admin.headers)
    if expected_refusal(path, allow_empty=False, deleting=route == "file"):
        assert response.status_code == 400
        assert SEEN == []
    else:
        assert response.status_code == 200, await response.get_data()
        expected = [(QUERY_ROUTES[route], (path,))]
        if route == "download":
            expected.insert(0, ("stat", (path,)))
            assert await response.get_data() == b"spy"
        assert expected == SEEN
    assert snapshot(sentinel) == before
