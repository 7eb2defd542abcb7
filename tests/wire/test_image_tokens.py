"""Images are counted by the pixel size in their header, and flat only when it cannot be read."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest

from contextwarden.context import Message
from contextwarden.log.events import BinaryPart
from contextwarden.tokens import IMAGE_TOKENS, best_counter, image_size, image_tokens
from contextwarden.wire.blocks import message_block_tokens


def png(width: int, height: int) -> bytes:
    """A real, valid PNG of one grey row repeated (zlib-compressed scanlines)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def webp_vp8x(width: int, height: int) -> bytes:
    body = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little")
    body += (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", len(body) + 4) + b"WEBP" + body


@pytest.mark.parametrize("make", [png, gif, jpeg, webp_vp8x])
def test_the_size_is_read_from_each_formats_header(make: object) -> None:
    assert image_size(make(640, 480)) == (640, 480)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("size", "tokens"),
    [
        ((1, 1), 255),  # one OpenAI high-detail tile (85 + 170) is more than Anthropic's 1
        ((1024, 1024), 1399),  # Anthropic's 1024*1024/750 is more than OpenAI's 4 tiles (765)
        ((4000, 3000), 2459),  # Anthropic scales to 1568x1176 first; OpenAI to 1024x768, 4 tiles
    ],
)
def test_tokens_are_the_larger_of_the_two_providers_rules(size: tuple[int, int], tokens: int) -> None:
    assert image_tokens(png(*size)) == tokens


def test_an_unreadable_image_keeps_the_flat_estimate() -> None:
    assert image_tokens(b"not an image at all") == IMAGE_TOKENS
    assert image_tokens(b"\x89PNG\r\n\x1a\n") == IMAGE_TOKENS  # truncated header
    assert image_tokens(b"\xff\xd8\xff\xe0\x00\x01") == IMAGE_TOKENS  # a JPEG segment of impossible length


def test_the_wire_meter_and_the_window_count_a_small_image_by_its_size() -> None:
    counter = best_counter()
    tiny = base64.b64encode(png(1, 1)).decode()
    small = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{tiny}"}}]}
    linked = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}
    assert message_block_tokens(linked, counter) - message_block_tokens(small, counter) == IMAGE_TOKENS - 255

    from contextwarden.window.accounting import message_tokens

    with_image = Message(role="user", text="look", parts=(BinaryPart(media_type="image/png", data=png(1, 1)),))
    with_photo = Message(role="user", text="look", parts=(BinaryPart(media_type="image/png", data=png(1600, 1200)),))
    assert message_tokens(with_photo, counter) - message_tokens(with_image, counter) > 1000
