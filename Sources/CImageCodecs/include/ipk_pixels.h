#ifndef IPK_PIXELS_H
#define IPK_PIXELS_H
#include <stdint.h>
#include <stddef.h>

/* Converts `width` straight-alpha RGBA8 pixels in place to premultiplied alpha (rounded: c * a / 255).
   Every codec whose library hands out straight alpha (libpng, giflib, libwebp) calls this per row. */
void ipk_premultiply_rgba_row(uint8_t *row, size_t width);

/* Expands `width` packed RGB8 pixels at `src` to opaque RGBA8 at `dst` (dst may not overlap src). */
void ipk_rgb_to_rgba_row(const uint8_t *src, uint8_t *dst, size_t width);

/* Converts `width` premultiplied RGBA8 pixels from `src` back to straight alpha at `dst` (for encoders).
   `dst` may equal `src`. */
void ipk_unpremultiply_rgba_row(const uint8_t *src, uint8_t *dst, size_t width);
#endif
