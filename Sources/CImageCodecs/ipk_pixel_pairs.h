#ifndef IPK_PIXEL_PAIRS_H
#define IPK_PIXEL_PAIRS_H
#include <stdint.h>

/* What the scalers' SSE4.1 rows share: two neighbouring RGBA pixels weighted and summed per channel in one
   instruction. Their channels are interleaved as 16-bit pairs (r0 r1 g0 g1 b0 b1 a0 a1) and multiplied by the
   pair of weights with pmaddwd, which sums each pair in 32 bits: the products and sums of the plain loops, so the
   same values. Weights must fit in 16 bits. The CPU is asked at run time; elsewhere the plain loops run. */
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <immintrin.h>
#define IPK_HAS_SSE41_ROWS 1

/* Whether the SSE4.1 rows may run here. */
static inline int ipk_sse41_rows_available(void) {
    return __builtin_cpu_supports("sse4.1");
}

/* first * w0 + second * w1 per channel, as four 32-bit sums; `two_pixels` holds the two pixels' 8 bytes. */
__attribute__((target("sse4.1")))
static inline __m128i ipk_weighted_pixel_pair(__m128i two_pixels, int32_t w0, int32_t w1) {
    const __m128i pairs = _mm_setr_epi8(0, 4, 1, 5, 2, 6, 3, 7, -1, -1, -1, -1, -1, -1, -1, -1);
    __m128i channels = _mm_cvtepu8_epi16(_mm_shuffle_epi8(two_pixels, pairs));
    __m128i weights = _mm_set1_epi32((int32_t)(((uint32_t)(uint16_t)w1 << 16) | (uint16_t)w0));
    return _mm_madd_epi16(channels, weights);
}
#endif

#endif
