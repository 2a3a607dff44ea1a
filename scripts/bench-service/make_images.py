#!/usr/bin/env python3
"""The benchmark's source photos: 200 distinct 1920x1080 q85 baseline JPEGs cut from the large corpus photos,
and 256x256 centre-crop thumbnails (Q80) of the first 20 for the static-file peer.

Each file is a different crop of one of five large photos, at a different scale, some mirrored, each with its
own slight colour tint, so no two files share bytes or pixels: a server that caches by content, or a JPEG
decoder that is faster on a repeat, cannot take a shortcut. Seeded by the file's number, so a rerun makes the
same set. Needs pyvips (the venv that setup.sh makes).

    make_images.py --corpus ../shared/corpus/photos --out out/bench-service/images --thumbs out/bench-service/thumbs
"""
import argparse
import hashlib
import os
import random
import sys

import pyvips

# The corpus photos large enough to cut a 1920x1080 frame from without enlarging (MANIFEST.md: 4096x2713,
# 2731x4096, 4032x3024 with sRGB ICC, 5250x3450, 4032x3024 Display P3).
SOURCES = [
    "fresco-animal_a_xxl.jpg",
    "fresco-animal_d_xxl.jpg",
    "imagers-scaledown-test.jpg",
    "sdwebimage-TestImageLarge.jpg",
    "sdwebimage-TestJFIF.jpg",
]
COUNT = 200
THUMBS = 20
W, H = 1920, 1080


def load(path):
    image = pyvips.Image.new_from_file(path, access="sequential")
    # Plain sRGB pixels: the Display P3 photo is converted through its profile; the rest are sRGB already.
    if image.get_typeof("icc-profile-data") != 0:
        image = image.icc_transform("srgb", embedded=True)
    if image.bands == 4:
        image = image.flatten()
    return image.cast("uchar").copy_memory()


def variant(source, rng):
    cover = max(W / source.width, H / source.height)
    scale = rng.uniform(cover, min(1.0, cover * 1.7))
    scaled = source.resize(scale)
    left = rng.randint(0, scaled.width - W)
    top = rng.randint(0, scaled.height - H)
    frame = scaled.crop(left, top, W, H)
    mirrored = rng.random() < 0.5
    if mirrored:
        frame = frame.fliphor()
    tint = [rng.uniform(0.9, 1.1) for _ in range(3)]
    frame = (frame * tint).cast("uchar")
    return frame, f"scale={scale:.3f} crop={left},{top} mirrored={int(mirrored)} tint={','.join(f'{t:.3f}' for t in tint)}"


def save_jpeg(image, path, quality):
    # Baseline (not interlaced), no metadata. libvips 8.15 renamed strip= to keep=.
    try:
        image.jpegsave(path, Q=quality, interlace=False, keep="none")
    except pyvips.Error:
        image.jpegsave(path, Q=quality, interlace=False, strip=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--thumbs", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.thumbs, exist_ok=True)

    sources = [load(os.path.join(args.corpus, name)) for name in SOURCES]
    digests = set()
    with open(os.path.join(args.out, "MANIFEST.tsv"), "w") as manifest:
        manifest.write("file\tsource\thow\n")
        for n in range(1, COUNT + 1):
            rng = random.Random(n)
            k = (n - 1) % len(SOURCES)
            frame, how = variant(sources[k], rng)
            path = os.path.join(args.out, f"img-{n:03d}.jpg")
            save_jpeg(frame, path, 85)
            with open(path, "rb") as f:
                digests.add(hashlib.sha256(f.read()).hexdigest())
            manifest.write(f"img-{n:03d}.jpg\t{SOURCES[k]}\t{how}\n")
    if len(digests) != COUNT:
        sys.exit(f"make_images: only {len(digests)} distinct files of {COUNT}")
    open(os.path.join(args.out, ".done"), "w").close()

    for n in range(1, THUMBS + 1):
        name = f"img-{n:03d}.jpg"
        thumb = pyvips.Image.thumbnail(os.path.join(args.out, name), 256, height=256, crop="centre")
        save_jpeg(thumb, os.path.join(args.thumbs, name), 80)
    open(os.path.join(args.thumbs, ".done"), "w").close()
    print(f"make_images: {COUNT} photos in {args.out}, {THUMBS} thumbnails in {args.thumbs}")


if __name__ == "__main__":
    main()
