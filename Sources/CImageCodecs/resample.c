#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ipk_resize.h"

/* Separable Catmull-Rom resampling in fixed point, the way Pillow resamples: per output position, the input
   range its kernel covers and the weights, normalised to 1 and scaled to IPK_WEIGHT_BITS; a vertical pass
   into 8-bit rows, then a horizontal pass. When shrinking, the kernel widens by the ratio, so every input pixel
   counts (no aliasing). Integer arithmetic throughout; the vertical pass runs along whole rows, which the
   compiler vectorises. */

#define IPK_WEIGHT_BITS 14

/* Catmull-Rom (cubic with a = -0.5): sharp, and exact on linear ramps. */
static double ipk_cubic(double x) {
    const double a = -0.5;
    if (x < 0) x = -x;
    if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
    return 0;
}

typedef struct {
    int *start;
    int *count;
    int32_t *weight; /* taps_max per output position */
    int taps_max;
} ipk_kernel;

static void ipk_kernel_free(ipk_kernel *k) {
    free(k->start);
    free(k->count);
    free(k->weight);
}

static int ipk_kernel_make(ipk_kernel *k, int in_n, int out_n) {
    double scale = (double)in_n / (double)out_n;
    double stretch = scale < 1 ? 1 : scale;
    double support = 2.0 * stretch;
    k->taps_max = (int)ceil(support) * 2 + 1;
    k->start = malloc(sizeof(int) * (size_t)out_n);
    k->count = malloc(sizeof(int) * (size_t)out_n);
    k->weight = malloc(sizeof(int32_t) * (size_t)out_n * (size_t)k->taps_max);
    double *w = malloc(sizeof(double) * (size_t)k->taps_max);
    if (!k->start || !k->count || !k->weight || !w) {
        ipk_kernel_free(k);
        free(w);
        return -1;
    }
    for (int o = 0; o < out_n; o++) {
        double centre = ((double)o + 0.5) * scale;
        int lo = (int)(centre - support + 0.5);
        int hi = (int)(centre + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in_n) hi = in_n;
        int n = hi - lo;
        if (n > k->taps_max) n = k->taps_max;
        double sum = 0;
        for (int t = 0; t < n; t++) {
            w[t] = ipk_cubic(((double)(lo + t) - centre + 0.5) / stretch);
            sum += w[t];
        }
        /* Weights that sum to exactly 1 << IPK_WEIGHT_BITS: a flat area stays exactly flat. */
        int32_t *fixed = k->weight + (size_t)o * (size_t)k->taps_max;
        int32_t total = 0, largest = 0;
        for (int t = 0; t < n; t++) {
            fixed[t] = (int32_t)lround(sum != 0 ? w[t] / sum * (1 << IPK_WEIGHT_BITS) : 0);
            total += fixed[t];
            if (fixed[t] > fixed[largest]) largest = t;
        }
        if (n > 0) fixed[largest] += (1 << IPK_WEIGHT_BITS) - total;
        k->start[o] = lo;
        k->count[o] = n;
    }
    free(w);
    return 0;
}

static inline uint8_t ipk_clamp8(int32_t v) {
    v >>= IPK_WEIGHT_BITS;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

IPK_VECTOR_CLONES
int ipk_resample_rgba_premultiplied(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                    uint8_t *dst, int dst_w, int dst_h, size_t dst_stride, uint8_t *scratch) {
    if (src_w < 1 || src_h < 1 || dst_w < 1 || dst_h < 1) return -1;
    ipk_kernel horizontal = {0}, vertical = {0};
    size_t src_row_bytes = (size_t)src_w * 4;
    /* Vertical first, over whole source rows (vectorised), so the costlier horizontal pass runs on dst_h rows
       rather than src_h. */
    uint8_t *owned_rows = scratch ? NULL : malloc(src_row_bytes * (size_t)dst_h);
    uint8_t *rows = scratch ? scratch : owned_rows;
    int32_t *sums = malloc(sizeof(int32_t) * src_row_bytes);
    if (!rows || !sums || ipk_kernel_make(&vertical, src_h, dst_h) != 0) {
        free(owned_rows);
        free(sums);
        return -1;
    }
    if (ipk_kernel_make(&horizontal, src_w, dst_w) != 0) {
        ipk_kernel_free(&vertical);
        free(owned_rows);
        free(sums);
        return -1;
    }
    for (int o = 0; o < dst_h; o++) {
        const int32_t *w = vertical.weight + (size_t)o * (size_t)vertical.taps_max;
        for (size_t i = 0; i < src_row_bytes; i++) sums[i] = 1 << (IPK_WEIGHT_BITS - 1);
        for (int t = 0; t < vertical.count[o]; t++) {
            const uint8_t *in = src + (size_t)(vertical.start[o] + t) * src_stride;
            int32_t weight = w[t];
            for (size_t i = 0; i < src_row_bytes; i++) sums[i] += in[i] * weight;
        }
        uint8_t *out = rows + (size_t)o * src_row_bytes;
        for (size_t i = 0; i < src_row_bytes; i++) out[i] = ipk_clamp8(sums[i]);
    }
    for (int y = 0; y < dst_h; y++) {
        const uint8_t *in = rows + (size_t)y * src_row_bytes;
        uint8_t *out = dst + (size_t)y * dst_stride;
        for (int o = 0; o < dst_w; o++) {
            const int32_t *w = horizontal.weight + (size_t)o * (size_t)horizontal.taps_max;
            const uint8_t *p = in + (size_t)horizontal.start[o] * 4;
            int32_t r = 1 << (IPK_WEIGHT_BITS - 1), g = r, b = r, a = r;
            for (int t = 0; t < horizontal.count[o]; t++, p += 4) {
                r += p[0] * w[t]; g += p[1] * w[t]; b += p[2] * w[t]; a += p[3] * w[t];
            }
            uint8_t alpha = ipk_clamp8(a);
            /* The kernel's negative lobes can push a colour past its alpha; premultiplied colour never is. */
            uint8_t red = ipk_clamp8(r), green = ipk_clamp8(g), blue = ipk_clamp8(b);
            out[o * 4 + 0] = red > alpha ? alpha : red;
            out[o * 4 + 1] = green > alpha ? alpha : green;
            out[o * 4 + 2] = blue > alpha ? alpha : blue;
            out[o * 4 + 3] = alpha;
        }
    }
    ipk_kernel_free(&horizontal);
    ipk_kernel_free(&vertical);
    free(owned_rows);
    free(sums);
    return 0;
}
