#!/usr/bin/env python3
"""Writes the WebP seeds in Seeds/WebP/: the shared corpus has no WebP file, and a fuzzer started from
nothing spends its whole run finding the RIFF layout. libwebp's own encoders (through ctypes, so no package
is needed) make the stills; the animations are assembled here from lossless stills, chunk by chunk, so they
also cover frame offsets, blending and disposal. Run once; the output is committed.
"""
import ctypes
import os
import struct

webp = ctypes.CDLL("libwebp.so.7")
out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "WebP")


def pixels(width, height, phase):
    """Straight RGBA: a gradient with a transparent corner, so alpha and colour both vary."""
    data = bytearray()
    for y in range(height):
        for x in range(width):
            alpha = 0 if x + y < phase else 255
            data += bytes(((x * 37 + phase) & 255, (y * 53) & 255, ((x ^ y) * 11) & 255, alpha))
    return bytes(data)


def encode(width, height, phase, quality=None):
    """A still WebP file: lossless when quality is None."""
    rgba = pixels(width, height, phase)
    output = ctypes.POINTER(ctypes.c_uint8)()
    if quality is None:
        size = webp.WebPEncodeLosslessRGBA(rgba, width, height, width * 4, ctypes.byref(output))
    else:
        size = webp.WebPEncodeRGBA(rgba, width, height, width * 4, ctypes.c_float(quality), ctypes.byref(output))
    data = ctypes.string_at(output, size)
    webp.WebPFree(output)
    return data


def chunks(riff):
    """The (fourcc, payload) chunks of a RIFF WEBP file."""
    offset, found = 12, []
    while offset + 8 <= len(riff):
        fourcc, length = riff[offset:offset + 4], struct.unpack("<I", riff[offset + 4:offset + 8])[0]
        found.append((fourcc, riff[offset + 8:offset + 8 + length]))
        offset += 8 + length + (length & 1)
    return found


def chunk(fourcc, payload):
    return fourcc + struct.pack("<I", len(payload)) + payload + (b"\0" if len(payload) & 1 else b"")


def u24(value):
    return struct.pack("<I", value)[:3]


def animation(canvas, frames, loops):
    """frames: (x, y, width, height, duration_ms, blend, dispose, phase); x and y even, as ANMF requires."""
    body = chunk(b"VP8X", bytes([0x12, 0, 0, 0]) + u24(canvas[0] - 1) + u24(canvas[1] - 1))
    body += chunk(b"ANIM", bytes((255, 255, 255, 0)) + struct.pack("<H", loops))
    for x, y, width, height, duration, blend, dispose, phase in frames:
        image = b"".join(chunk(fourcc, payload) for fourcc, payload in chunks(encode(width, height, phase)))
        flags = (0 if blend else 2) | (1 if dispose else 0)
        body += chunk(b"ANMF", u24(x // 2) + u24(y // 2) + u24(width - 1) + u24(height - 1) + u24(duration)
                      + bytes([flags]) + image)
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body


seeds = {
    "lossless-16x12.webp": encode(16, 12, 5),
    "lossy-24x17.webp": encode(24, 17, 0, quality=60),
    "lossy-alpha-20x20.webp": encode(20, 20, 9, quality=80),
    "lossless-1x1.webp": encode(1, 1, 0),
    "anim-3-frames.webp": animation((20, 16), [(0, 0, 20, 16, 100, True, False, 0),
                                                (4, 2, 8, 8, 50, False, True, 3),
                                                (10, 8, 10, 8, 0, True, False, 7)], loops=0),
    "anim-offcanvas-frame.webp": animation((8, 8), [(0, 0, 8, 8, 40, True, False, 1),
                                                     (6, 6, 6, 6, 40, True, True, 2)], loops=3),
}
os.makedirs(out_dir, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out_dir, name), "wb") as handle:
        handle.write(data)
    print(f"{name}: {len(data)} bytes")
