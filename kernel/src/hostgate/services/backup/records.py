"""Parts inside an archive: named byte streams with checksums, closed by a manifest.

Each frame holds one record, a kind byte and a payload:

* ``P`` begin a part: JSON ``{"name", "kind"}``
* ``D`` the next bytes of the current part
* ``E`` end the part: JSON ``{"size", "sha256"}``
* ``Z`` the final frame: JSON ``{"parts", "manifestSha256"}``

The parts come in this order: ``meta.json``, one ``db/<table>.jsonl`` per table,
``recordings/<path>`` per recording file, ``manifest.json`` (every earlier part with
its size and SHA-256). A reader checks each part against its end record and the
manifest, and the final frame against the manifest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .archive import CorruptArchive, FrameWriter

BEGIN, DATA, END, FINISH = b"P", b"D", b"E", b"Z"
MANIFEST = "manifest.json"
META = "meta.json"
MAX_JSON_RECORD = 64 * 1024
MAX_MANIFEST = 256 * 1024 * 1024


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


@dataclass
class PartInfo:
    """One finished part."""

    name: str
    kind: str
    size: int
    sha256: str

    def as_json(self) -> dict[str, Any]:
        """The manifest entry."""
        return {"name": self.name, "kind": self.kind, "size": self.size, "sha256": self.sha256}


@dataclass
class PartSealer:
    """Turns parts into frames; remembers every part for the manifest."""

    frames: FrameWriter
    parts: list[PartInfo] = field(default_factory=list)
    _name: str | None = None
    _kind: str = ""
    _size: int = 0
    _hash: Any = None

    def begin(self, name: str, kind: str) -> bytes:
        """Start a part."""
        if self._name is not None:
            raise RuntimeError(f"part {self._name} is still open")
        self._name, self._kind, self._size, self._hash = name, kind, 0, hashlib.sha256()
        return self.frames.seal(BEGIN + _json({"name": name, "kind": kind}))

    def data(self, chunk: bytes) -> Iterator[bytes]:
        """Frames for the next bytes of the open part."""
        if self._name is None:
            raise RuntimeError("no open part")
        step = self.frames.header.frame_plaintext - 1
        view = memoryview(chunk)
        for start in range(0, len(view), step):
            piece = bytes(view[start : start + step])
            self._size += len(piece)
            self._hash.update(piece)
            yield self.frames.seal(DATA + piece)

    def end(self) -> bytes:
        """Close the open part."""
        if self._name is None:
            raise RuntimeError("no open part")
        info = PartInfo(self._name, self._kind, self._size, self._hash.hexdigest())
        self.parts.append(info)
        self._name = None
        return self.frames.seal(END + _json({"size": info.size, "sha256": info.sha256}))

    def whole(self, name: str, kind: str, content: bytes) -> Iterator[bytes]:
        """A small part in one go."""
        yield self.begin(name, kind)
        yield from self.data(content)
        yield self.end()

    def finish(self, summary: dict[str, Any]) -> Iterator[bytes]:
        """The manifest part and the final frame."""
        manifest = _json({**summary, "parts": [p.as_json() for p in self.parts]})
        count = len(self.parts)
        yield from self.whole(MANIFEST, "manifest", manifest)
        digest = hashlib.sha256(manifest).hexdigest()
        yield self.frames.seal(
            FINISH + _json({"parts": count, "manifestSha256": digest}), final=True
        )


@dataclass(frozen=True)
class Begin:
    """A part starts."""

    name: str
    kind: str


@dataclass(frozen=True)
class Chunk:
    """The next bytes of the current part."""

    data: bytes


@dataclass(frozen=True)
class End:
    """The current part ended; its checksum matched its end record."""

    info: PartInfo


@dataclass(frozen=True)
class Finished:
    """The archive ended properly; every part matched the manifest."""

    manifest: dict[str, Any]


def _load(payload: bytes, what: str) -> dict[str, Any]:
    if len(payload) > MAX_JSON_RECORD:
        raise CorruptArchive(f"{what} record is too large")
    try:
        value = json.loads(payload)
    except ValueError:
        raise CorruptArchive(f"{what} record is not JSON") from None
    if not isinstance(value, dict):
        raise CorruptArchive(f"{what} record is not an object")
    return value


def read_parts(
    frames: Iterable[tuple[bytes, bool]],
) -> Iterator[Begin | Chunk | End | Finished]:
    """Parse frames into part events, checking structure, checksums and the manifest.

    The manifest part is consumed here; the last event, ``Finished``, comes only
    when every part matched it and the final frame matched the manifest.
    """
    seen: list[PartInfo] = []
    summary: dict[str, Any] | None = None
    current: Begin | None = None
    size = 0
    digest: Any = None
    manifest = bytearray()
    manifest_done = False
    for record, final in frames:
        kind, payload = record[:1], record[1:]
        if final != (kind == FINISH):
            raise CorruptArchive("the final frame is out of place")
        if manifest_done and kind != FINISH:
            raise CorruptArchive("data follows the manifest")
        if kind == BEGIN:
            if current is not None:
                raise CorruptArchive(f"part {current.name} never ended")
            head = _load(payload, "part")
            name, part_kind = head.get("name"), head.get("kind")
            if not isinstance(name, str) or not isinstance(part_kind, str):
                raise CorruptArchive("a part has no name")
            if not seen and name != META:
                raise CorruptArchive("the archive does not start with its metadata")
            if any(p.name == name for p in seen):
                raise CorruptArchive(f"part {name} appears twice")
            current, size, digest = Begin(name, part_kind), 0, hashlib.sha256()
            if name != MANIFEST:
                yield current
        elif kind == DATA:
            if current is None:
                raise CorruptArchive("data outside a part")
            size += len(payload)
            digest.update(payload)
            if current.name == MANIFEST:
                if len(manifest) + len(payload) > MAX_MANIFEST:
                    raise CorruptArchive("the manifest is too large")
                manifest.extend(payload)
            else:
                yield Chunk(payload)
        elif kind == END:
            if current is None:
                raise CorruptArchive("a part ends that never began")
            tail = _load(payload, "part end")
            info = PartInfo(current.name, current.kind, size, digest.hexdigest())
            if tail.get("size") != info.size or tail.get("sha256") != info.sha256:
                raise CorruptArchive(f"part {current.name} does not match its checksum")
            if current.name == MANIFEST:
                manifest_done = True
            else:
                seen.append(info)
                yield End(info)
            current = None
        elif kind == FINISH:
            if not manifest_done:
                raise CorruptArchive("the archive ends without a manifest")
            summary = _check_manifest(bytes(manifest), seen, _load(payload, "final"))
        else:
            raise CorruptArchive("unknown record")
    # The frame reader checked that nothing follows the final frame.
    if summary is None:
        raise CorruptArchive("the file is truncated (the final frame is missing)")
    yield Finished(summary)


def parse_manifest(raw: bytes) -> dict[str, Any]:
    """The manifest as a dict."""
    try:
        value = json.loads(raw)
    except ValueError:
        raise CorruptArchive("the manifest is not JSON") from None
    if not isinstance(value, dict) or not isinstance(value.get("parts"), list):
        raise CorruptArchive("the manifest has no part list")
    return value


def _check_manifest(raw: bytes, seen: list[PartInfo], final: dict[str, Any]) -> dict[str, Any]:
    if final.get("manifestSha256") != hashlib.sha256(raw).hexdigest():
        raise CorruptArchive("the manifest does not match the final frame")
    listed = parse_manifest(raw)["parts"]
    if final.get("parts") != len(seen) or len(listed) != len(seen):
        raise CorruptArchive("the archive holds a different number of parts than listed")
    for entry, info in zip(listed, seen, strict=True):
        if entry != info.as_json():
            raise CorruptArchive(f"part {info.name} does not match the manifest")
    return parse_manifest(raw)
