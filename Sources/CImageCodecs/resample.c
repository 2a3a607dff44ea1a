#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ipk_resize.h"
#include "ipk_pixel_pairs.h"

/* Separable Catmull-Rom resampling in fixed point, the way Pillow resamples: per output position, the input
   range its kernel covers and the weights, normalised to 1 and scaled to IPK_WEIGHT_BITS; a vertical pass
   into 8-bit rows, then a horizontal pass. When shrinking, the kernel widens by the ratio, so every input pixel
   counts (no aliasing). Integer arithmetic throughout; the vertical pass runs along whole rows, which the
   compiler vectorises, and the horizontal pass, which it does not, takes two taps per instruction on x86-64
   (SSE4.1) with the same products and sums, so both paths give the same bytes. */

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
    int fits_16_bits; /* every weight is within int16_t, as the two-taps-at-a-time row needs */
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
    k->fits_16_bits = 1;
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
        for (int t = 0; t < n; t++) {
            if (fixed[t] < INT16_MIN || fixed[t] > INT16_MAX) k->fits_16_bits = 0;
        }
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

/* The horizontal pass of one row, one output pixel at a time. */
static void ipk_horizontal_row_scalar(const uint8_t *in, uint8_t *out, int dst_w, const ipk_kernel *k) {
    for (int o = 0; o < dst_w; o++) {
        const int32_t *w = k->weight + (size_t)o * (size_t)k->taps_max;
        const uint8_t *p = in + (size_t)k->start[o] * 4;
        int32_t r = 1 << (IPK_WEIGHT_BITS - 1), g = r, b = r, a = r;
        for (int t = 0; t < k->count[o]; t++, p += 4) {
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

#ifdef IPK_HAS_SSE41_ROWS
/* The same arithmetic two taps at a time (see ipk_pixel_pairs.h); the kernel checks that its weights fit. */
__attribute__((target("sse4.1")))
static void ipk_horizontal_row_sse41(const uint8_t *in, uint8_t *out, int dst_w, const ipk_kernel *k) {
    const __m128i bias = _mm_set1_epi32(1 << (IPK_WEIGHT_BITS - 1));
    const __m128i alpha_bytes = _mm_setr_epi8(3, 3, 3, 3, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    for (int o = 0; o < dst_w; o++) {
        const int32_t *w = k->weight + (size_t)o * (size_t)k->taps_max;
        const uint8_t *p = in + (size_t)k->start[o] * 4;
        int n = k->count[o], t = 0;
        __m128i sum = bias;
        for (; t + 1 < n; t += 2, p += 8) {
            sum = _mm_add_epi32(sum, ipk_weighted_pixel_pair(_mm_loadl_epi64((const __m128i *)p), w[t], w[t + 1]));
        }
        if (t < n) {
            int32_t last;
            memcpy(&last, p, 4);
            __m128i channels = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(last));
            sum = _mm_add_epi32(sum, _mm_mullo_epi32(channels, _mm_set1_epi32(w[t])));
        }
        __m128i words = _mm_packs_epi32(_mm_srai_epi32(sum, IPK_WEIGHT_BITS), _mm_setzero_si128());
        __m128i bytes = _mm_packus_epi16(words, words);
        bytes = _mm_min_epu8(bytes, _mm_shuffle_epi8(bytes, alpha_bytes));
        int32_t pixel = _mm_cvtsi128_si32(bytes);
        memcpy(out + (size_t)o * 4, &pixel, 4);
    }
}
#endif

IPK_VECTOR_CLONES
static int ipk_resample(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                        uint8_t *dst, int dst_w, int dst_h, size_t dst_stride, uint8_t *scratch, int simd_rows) {
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
#ifdef IPK_HAS_SSE41_ROWS
    simd_rows = simd_rows && horizontal.fits_16_bits && ipk_sse41_rows_available();
#endif
    for (int y = 0; y < dst_h; y++) {
        const uint8_t *in = rows + (size_t)y * src_row_bytes;
        uint8_t *out = dst + (size_t)y * dst_stride;
#ifdef IPK_HAS_SSE41_ROWS
        if (simd_rows) {
            ipk_horizontal_row_sse41(in, out, dst_w, &horizontal);
            continue;
        }
#endif
        ipk_horizontal_row_scalar(in, out, dst_w, &horizontal);
    }
    ipk_kernel_free(&horizontal);
    ipk_kernel_free(&vertical);
    free(owned_rows);
    free(sums);
    return 0;
}

int ipk_resample_rgba_premultiplied(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                    uint8_t *dst, int dst_w, int dst_h, size_t dst_stride, uint8_t *scratch) {
    return ipk_resample(src, src_w, src_h, src_stride, dst, dst_w, dst_h, dst_stride, scratch, 1);
}

int ipk_resample_rgba_premultiplied_scalar(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                           uint8_t *dst, int dst_w, int dst_h, size_t dst_stride) {
    return ipk_resample(src, src_w, src_h, src_stride, dst, dst_w, dst_h, dst_stride, NULL, 0);
}
