"""Tokens of an image part, from its pixel size when its header says it.

Providers bill an image by its size, not by a flat rate: Anthropic about width·height/750 after
scaling the long edge down to 1,568 px; OpenAI's high detail 85 plus 170 per 512 px tile after
fitting the image in 2,048 px and its short side in 768 px. A flat 1,600 made a 1x1 PNG cost as
much as a photo (the Codex sample's replay then predicted 12% more input than was billed). The
estimate here is the larger of the two rules, so a budget stays safe on either provider; an image
whose size cannot be read (a URL, a truncated or unknown header) keeps the flat
:data:`IMAGE_TOKENS`.

Only the header is read: PNG's IHDR, GIF's screen descriptor, JPEG's first start-of-frame marker,
WebP's VP8/VP8L/VP8X chunk. Nothing is decoded, so hostile bytes cost a bounded scan at most.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct

from ._cache import IMAGE_TOKENS

_JPEG_SCAN = 1 << 16
"""Bytes of a JPEG searched for its start-of-frame marker (EXIF data may come first)."""


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from an image's header, or ``None`` when it cannot be read."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24 and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
    elif data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
    elif data.startswith(b"\xff\xd8"):
        found = _jpeg_size(data[:_JPEG_SCAN])
        if found is None:
            return None
        width, height = found
    elif data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        found = _webp_size(data)
        if found is None:
            return None
        width, height = found
    else:
        return None
    return (width, height) if width > 0 and height > 0 else None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return width, height
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if length < 2:
            return None
        i += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        width = 1 + int.from_bytes(data[24:27], "little")
        height = 1 + int.from_bytes(data[27:30], "little")
        return width, height
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


def _anthropic(width: int, height: int) -> int:
    scale = min(1.0, 1568 / max(width, height))
    return max(1, math.ceil(width * scale * height * scale / 750))


def _openai_high_detail(width: int, height: int) -> int:
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        w, h = w * 2048 / max(w, h), h * 2048 / max(w, h)
    if min(w, h) > 768:
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def image_tokens(data: bytes) -> int:
    """Tokens of an image with these bytes: by its pixel size, or :data:`IMAGE_TOKENS` if unknown."""
    size = image_size(data)
    if size is None:
        return IMAGE_TOKENS
    return max(_anthropic(*size), _openai_high_detail(*size))


def base64_image_tokens(encoded: str) -> int:
    """:func:`image_tokens` of base64 text (a data URL's payload), decoding only its head."""
    head = encoded[: (_JPEG_SCAN // 3) * 4]
    head = head[: len(head) - len(head) % 4]
    try:
        return image_tokens(base64.b64decode(head, validate=False))
    except (binascii.Error, ValueError):
        return IMAGE_TOKENS


def data_url_image_tokens(url: str) -> int:
    """Tokens of an image given as a URL: a ``data:...;base64,`` URL by its size, any other flat."""
    if url.startswith("data:") and ";base64," in url[:100]:
        return base64_image_tokens(url.split(",", 1)[1])
    return IMAGE_TOKENS


__all__ = ["base64_image_tokens", "data_url_image_tokens", "image_size", "image_tokens"]
