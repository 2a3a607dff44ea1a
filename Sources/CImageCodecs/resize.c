#define STB_IMAGE_RESIZE_IMPLEMENTATION
#define STB_IMAGE_RESIZE_STATIC
#include <stb/stb_image_resize.h>
#include "ipk_resize.h"

int ipk_resize_rgba_premultiplied(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                  uint8_t *dst, int dst_w, int dst_h, size_t dst_stride) {
    /* Premultiplied pixels filter as four independent channels; treating them as linear (not sRGB)
       matches what Pillow and browsers do for thumbnails and keeps the float path short. */
    int ok = stbir_resize_uint8_generic(src, src_w, src_h, (int)src_stride,
                                        dst, dst_w, dst_h, (int)dst_stride,
                                        4, 3, STBIR_FLAG_ALPHA_PREMULTIPLIED,
                                        STBIR_EDGE_CLAMP, STBIR_FILTER_DEFAULT, STBIR_COLORSPACE_LINEAR, NULL);
    return ok ? 0 : -1;
}

void ipk_box_reduce_rgba(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                         uint8_t *dst, size_t dst_stride, int factor) {
    int dst_w = (src_w + factor - 1) / factor, dst_h = (src_h + factor - 1) / factor;
    for (int dy = 0; dy < dst_h; dy++) {
        int y0 = dy * factor, y1 = y0 + factor < src_h ? y0 + factor : src_h;
        uint8_t *out = dst + (size_t)dy * dst_stride;
        for (int dx = 0; dx < dst_w; dx++) {
            int x0 = dx * factor, x1 = x0 + factor < src_w ? x0 + factor : src_w;
            uint32_t sum[4] = {0, 0, 0, 0};
            for (int y = y0; y < y1; y++) {
                const uint8_t *p = src + (size_t)y * src_stride + (size_t)x0 * 4;
                for (int x = x0; x < x1; x++, p += 4) {
                    sum[0] += p[0]; sum[1] += p[1]; sum[2] += p[2]; sum[3] += p[3];
                }
            }
            uint32_t n = (uint32_t)((y1 - y0) * (x1 - x0));
            for (int c = 0; c < 4; c++) out[dx * 4 + c] = (uint8_t)((sum[c] + n / 2) / n);
        }
    }
}
