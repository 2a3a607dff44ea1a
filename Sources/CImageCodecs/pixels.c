#include "ipk_pixels.h"

/* (x + 128 + ((x + 128) >> 8)) >> 8 is the exact rounded x / 255 for x <= 255 * 255. */
static inline uint8_t div255(uint32_t x) {
    x += 128;
    return (uint8_t)((x + (x >> 8)) >> 8);
}

void ipk_premultiply_rgba_row(uint8_t *row, size_t width) {
    for (size_t i = 0; i < width; i++, row += 4) {
        uint32_t a = row[3];
        if (a == 255) continue;
        row[0] = div255(row[0] * a);
        row[1] = div255(row[1] * a);
        row[2] = div255(row[2] * a);
    }
}

void ipk_rgb_to_rgba_row(const uint8_t *src, uint8_t *dst, size_t width) {
    for (size_t i = 0; i < width; i++, src += 3, dst += 4) {
        dst[0] = src[0];
        dst[1] = src[1];
        dst[2] = src[2];
        dst[3] = 255;
    }
}

void ipk_unpremultiply_rgba_row(const uint8_t *src, uint8_t *dst, size_t width) {
    for (size_t i = 0; i < width; i++, src += 4, dst += 4) {
        uint32_t a = src[3];
        if (a == 255 || a == 0) {
            dst[0] = a ? src[0] : 0;
            dst[1] = a ? src[1] : 0;
            dst[2] = a ? src[2] : 0;
        } else {
            uint32_t r = (src[0] * 255u + a / 2) / a, g = (src[1] * 255u + a / 2) / a, b = (src[2] * 255u + a / 2) / a;
            dst[0] = (uint8_t)(r > 255 ? 255 : r);
            dst[1] = (uint8_t)(g > 255 ? 255 : g);
            dst[2] = (uint8_t)(b > 255 ? 255 : b);
        }
        dst[3] = (uint8_t)a;
    }
}
