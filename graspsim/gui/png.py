"""Minimal PNG writer for screenshots (8-bit RGB, zlib), numpy only."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

__all__ = ["write_png"]


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def write_png(path: str | Path, rgb: np.ndarray, level: int = 6) -> Path:
    """Write an (H, W, 3) or (H, W, 4) uint8 image (top row first) as PNG; returns the path."""
    a = np.ascontiguousarray(rgb, dtype=np.uint8)
    if a.ndim != 3 or a.shape[2] not in (3, 4):
        raise ValueError(f"expected an (H, W, 3|4) image, got shape {a.shape}")
    h, w, c = a.shape
    raw = np.concatenate([np.zeros((h, 1), np.uint8), a.reshape(h, w * c)], axis=1)  # filter 0 per row
    header = struct.pack(">IIBBBBB", w, h, 8, 2 if c == 3 else 6, 0, 0, 0)
    data = (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw.tobytes(), level))
            + _chunk(b"IEND", b""))
    from ..arguments import output_file

    p = output_file("PNG file", path)
    p.write_bytes(data)
    return p
