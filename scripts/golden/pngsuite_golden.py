#!/usr/bin/env python3
"""Golden pixels for PngSuite, made with Pillow (an independent PNG decoder, not libpng).

For every valid PngSuite file (names not starting with "x") prints "name sha1" where the digest is over
the image as ImagePipelineKit represents it: 8-bit RGBA, premultiplied (round(c * a / 255)), rows packed.
16-bit samples keep their high byte (what Pillow, Chrome and Firefox show); no gamma correction.

Regenerate (Pillow from PyPI):
    python3 -m venv .build-venv && .build-venv/bin/pip install pillow
    .build-venv/bin/python scripts/golden/pngsuite_golden.py ../shared/corpus/conformance/png/pngsuite \
        > Tests/ImagePipelineKitTests/Fixtures/pngsuite-golden.txt
"""
import hashlib
import os
import sys

from PIL import Image


def bit_depth(path):
    with open(path, "rb") as f:
        return f.read(25)[24]   # IHDR bit depth


def rgba_pixels(path):
    image = Image.open(path)
    image.load()
    depth = bit_depth(path)
    if image.mode == "L" and depth < 8 and isinstance(image.info.get("transparency"), int):
        # Pillow compares a low-bit-depth gray tRNS value with the pixels *after* scaling them to 8 bits, so it
        # never matches (PngSuite tbbn0g04: tRNS 15 of 4 bits is white). The PNG spec means the sample value:
        # scale it the same way before comparing.
        scaled = image.info["transparency"] * (255 // ((1 << depth) - 1))
        return [(v, v, v, 0 if v == scaled else 255) for v in image.getdata()]
    if image.mode in ("I;16", "I;16B", "I"):
        # 16-bit gray: Pillow keeps the full value; take the high byte, then apply tRNS on the 16-bit value.
        values = list(image.getdata())
        transparent = image.info.get("transparency")
        return [(v >> 8, v >> 8, v >> 8, 0 if transparent is not None and v == transparent else 255) for v in values]
    return list(image.convert("RGBA").getdata())


def premultiplied(pixels):
    out = bytearray()
    for r, g, b, a in pixels:
        out += bytes(((r * a + 127) // 255, (g * a + 127) // 255, (b * a + 127) // 255, a))
    return bytes(out)


def main(folder):
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".png") or name.startswith("x"):
            continue
        digest = hashlib.sha1(premultiplied(rgba_pixels(os.path.join(folder, name)))).hexdigest()
        print(name, digest)


if __name__ == "__main__":
    main(sys.argv[1])
