"""What each peer answers for the same 20 thumbnails: bytes, pixel size, and PSNR against libvips' own 256x256
centre crop of the same source.

The reference is pyvips.Image.thumbnail(source, 256, height=256, crop='centre') kept as pixels (never
JPEG-encoded), so every peer, the vips peer included, pays for its own JPEG encode and the figure compares
resampling + encoding. PSNR is computed with pyvips (libvips from pyvips-binary): both images as 3-band sRGB
floats, MSE over all pixels and bands, 10*log10(255^2/MSE). An answer that is not 256x256 gets no PSNR.
"""
import math
import os
import urllib.error
import urllib.request


def reference(source_file):
    import pyvips
    return _rgb(pyvips.Image.thumbnail(source_file, 256, height=256, crop="centre"))


def _rgb(image):
    if image.hasalpha():
        image = image.flatten()
    if image.interpretation not in ("srgb", "rgb"):
        image = image.colourspace("srgb")
    if image.bands == 1:
        image = image.bandjoin([image, image])
    return image.cast("float")


def psnr(data, ref):
    import pyvips
    image = pyvips.Image.new_from_buffer(data, "")
    if (image.width, image.height) != (ref.width, ref.height):
        return None, f"{image.width}x{image.height}"
    mse = ((_rgb(image) - ref) ** 2).avg()
    size = f"{image.width}x{image.height}"
    # Identical pixels would be infinite; 100 dB keeps the JSON valid and is far above any JPEG.
    return (round(10 * math.log10(255.0 ** 2 / mse), 2) if mse > 0 else 100.0), size


def probe(base, paths, source_files, keep_dir=None):
    """GETs base+path for each path (one by one) and compares each answer with the reference of its source;
    keeps the answers in keep_dir (to look at) when given."""
    rows = []
    if keep_dir:
        os.makedirs(keep_dir, exist_ok=True)
    for path, source in zip(paths, source_files):
        row = {"source": os.path.basename(source)}
        try:
            with urllib.request.urlopen(base + path, timeout=60) as response:
                data = response.read()
                row["status"] = response.status
                row["content_type"] = response.headers.get("Content-Type")
        except urllib.error.HTTPError as error:
            row["status"] = error.code
            rows.append(row)
            continue
        except OSError as error:
            row["status"] = 0
            row["error"] = str(error)
            rows.append(row)
            continue
        row["bytes"] = len(data)
        if keep_dir:
            with open(os.path.join(keep_dir, os.path.basename(source)), "wb") as f:
                f.write(data)
        try:
            row["psnr_db"], row["size"] = psnr(data, reference(source))
        except Exception as error:  # an answer pyvips cannot decode is a finding, not a crash
            row["psnr_db"], row["error"] = None, f"decode: {error}"
        rows.append(row)
    sizes = [r["bytes"] for r in rows if r.get("status") == 200]
    values = [r["psnr_db"] for r in rows if r.get("psnr_db") is not None]
    return {
        "images": len(rows),
        "ok_200": len(sizes),
        "mean_bytes": round(sum(sizes) / len(sizes)) if sizes else None,
        "total_bytes": sum(sizes),
        "mean_psnr_db": round(sum(values) / len(values), 2) if values else None,
        "min_psnr_db": min(values) if values else None,
        "not_256x256": sum(1 for r in rows if r.get("size") not in (None, "256x256")),
        "per_image": rows,
    }
