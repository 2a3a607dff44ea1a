#include <stdlib.h>
#include <string.h>
#include "ipk_resize.h"
#include "ipk_pixel_pairs.h"

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

/* The source index and the 8-bit weight of the pixel after it for destination position d along one axis,
   with pixel centres aligned (stb's and Pillow's convention) and edges clamped. */
static void ipk_bilinear_position(int src_n, int dst_n, int d, int *index, uint16_t *weight) {
    double s = ((double)d + 0.5) * (double)src_n / (double)dst_n - 0.5;
    if (s < 0) s = 0;
    int i = (int)s;
    int f = (int)((s - (double)i) * 256.0 + 0.5);
    if (f >= 256) { i += 1; f = 0; }
    if (i >= src_n - 1) { i = src_n - 1; f = 0; }
    *index = i;
    *weight = (uint16_t)f;
}

#ifdef IPK_HAS_SSE41_ROWS
/* The row below with SSE4.1: each destination pixel weighs its two source neighbours in one instruction (see
   ipk_pixel_pairs.h). */
__attribute__((target("sse4.1")))
static void ipk_bilinear_row_sse41(const uint8_t *row, int src_w, int dst_w, const int *xi, const uint16_t *xf,
                                   uint16_t *out) {
    for (int d = 0; d < dst_w; d++) {
        const uint8_t *p = row + (size_t)xi[d] * 4;
        uint32_t f = xf[d], g = 256 - f;
        uint64_t neighbours;
        if (xi[d] < src_w - 1) {
            memcpy(&neighbours, p, 8);
        } else {
            uint32_t last;
            memcpy(&last, p, 4);
            neighbours = (uint64_t)last * 0x100000001ull;
        }
        __m128i sums = ipk_weighted_pixel_pair(_mm_cvtsi64_si128((long long)neighbours), (int32_t)g, (int32_t)f);
        _mm_storel_epi64((__m128i *)(out + (size_t)d * 4), _mm_packus_epi32(sums, sums));
    }
}
#endif

/* One source row interpolated horizontally to dst_w pixels, scaled by 256. */
static void ipk_bilinear_row(const uint8_t *row, int src_w, int dst_w, const int *xi, const uint16_t *xf,
                             uint16_t *out, int simd) {
#ifdef IPK_HAS_SSE41_ROWS
    if (simd) return ipk_bilinear_row_sse41(row, src_w, dst_w, xi, xf, out);
#endif
    for (int d = 0; d < dst_w; d++) {
        const uint8_t *p = row + (size_t)xi[d] * 4;
        const uint8_t *q = xi[d] < src_w - 1 ? p + 4 : p;
        uint32_t f = xf[d], g = 256 - f;
        out[d * 4 + 0] = (uint16_t)(p[0] * g + q[0] * f);
        out[d * 4 + 1] = (uint16_t)(p[1] * g + q[1] * f);
        out[d * 4 + 2] = (uint16_t)(p[2] * g + q[2] * f);
        out[d * 4 + 3] = (uint16_t)(p[3] * g + q[3] * f);
    }
}

IPK_VECTOR_CLONES
static int ipk_upscale(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                       uint8_t *dst, int dst_w, int dst_h, size_t dst_stride, int simd) {
    if (src_w < 1 || src_h < 1 || dst_w < src_w || dst_h < src_h) return -1;
#ifdef IPK_HAS_SSE41_ROWS
    simd = simd && ipk_sse41_rows_available();
#endif
    int *xi = malloc(sizeof(int) * (size_t)dst_w);
    uint16_t *xf = malloc(sizeof(uint16_t) * (size_t)dst_w);
    uint16_t *rows = malloc(sizeof(uint16_t) * (size_t)dst_w * 8);
    if (!xi || !xf || !rows) {
        free(xi); free(xf); free(rows);
        return -1;
    }
    for (int dx = 0; dx < dst_w; dx++) ipk_bilinear_position(src_w, dst_w, dx, &xi[dx], &xf[dx]);
    /* The two source rows the current destination row blends, already widened; enlarging means consecutive
       destination rows mostly reuse them. */
    uint16_t *upper = rows, *lower = rows + (size_t)dst_w * 4;
    int upper_y = -1, lower_y = -1;
    for (int dy = 0; dy < dst_h; dy++) {
        int y0; uint16_t fy;
        ipk_bilinear_position(src_h, dst_h, dy, &y0, &fy);
        int y1 = y0 < src_h - 1 ? y0 + 1 : y0;
        if (upper_y != y0) {
            if (lower_y == y0) {
                uint16_t *t = upper; upper = lower; lower = t;
                upper_y = y0; lower_y = -1;
            } else {
                ipk_bilinear_row(src + (size_t)y0 * src_stride, src_w, dst_w, xi, xf, upper, simd);
                upper_y = y0;
            }
        }
        if (lower_y != y1) {
            ipk_bilinear_row(src + (size_t)y1 * src_stride, src_w, dst_w, xi, xf, lower, simd);
            lower_y = y1;
        }
        uint32_t g = fy, h = 256 - g;
        /* Restrict-qualified: told that the rows do not overlap, the compiler vectorises without checks. */
        uint8_t *restrict out = dst + (size_t)dy * dst_stride;
        const uint16_t *restrict top = upper, *restrict bottom = lower;
        for (int i = 0; i < dst_w * 4; i++) {
            out[i] = (uint8_t)((top[i] * h + bottom[i] * g + 32768) >> 16);
        }
    }
    free(xi); free(xf); free(rows);
    return 0;
}

int ipk_upscale_bilinear_rgba(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                              uint8_t *dst, int dst_w, int dst_h, size_t dst_stride) {
    return ipk_upscale(src, src_w, src_h, src_stride, dst, dst_w, dst_h, dst_stride, 1);
}

int ipk_upscale_bilinear_rgba_scalar(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                     uint8_t *dst, int dst_w, int dst_h, size_t dst_stride) {
    return ipk_upscale(src, src_w, src_h, src_stride, dst, dst_w, dst_h, dst_stride, 0);
}
