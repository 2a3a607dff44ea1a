#ifndef IPK_RESIZE_H
#define IPK_RESIZE_H
#include <stdint.h>
#include <stddef.h>

/* The scalers' loops are plain C that the compiler vectorises, except the per-pixel row loops, which have an
   SSE4.1 version chosen at run time. The package builds for baseline x86-64 (SSE2, without 32-bit multiplies);
   on x86-64 these functions are also compiled for AVX2 and the loader picks the variant the CPU runs (an
   ifunc), which halves their time. Not under a sanitizer: the loader runs an ifunc's
   resolver before the sanitizer's runtime is up, and an instrumented resolver crashes the process at start. */
#if defined(__x86_64__) && defined(__clang__)
#if !__has_feature(thread_sanitizer) && !__has_feature(address_sanitizer)
#define IPK_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef IPK_VECTOR_CLONES
#define IPK_VECTOR_CLONES
#endif

/* Resamples premultiplied RGBA8 with a separable Catmull-Rom kernel in 14-bit fixed point, widened by the ratio
   when shrinking (every input pixel counts), edges clamped, colour never above alpha. Several times faster than
   stb_image_resize's float filters, which it replaced. `scratch` holds the vertical pass's rows: at least
   src_w x 4 x dst_h bytes the call may overwrite, or NULL to have them allocated and freed here. A caller that
   resamples often passes reused memory: freshly allocated rows of that size are new pages to fault in, every
   call, once the allocator has returned the last call's to the system. Returns 0, or -1 for empty sizes or
   when its buffers cannot be allocated. */
int ipk_resample_rgba_premultiplied(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                    uint8_t *dst, int dst_w, int dst_h, size_t dst_stride, uint8_t *scratch);
/* The same resampling with the horizontal pass one tap at a time, as on a CPU without SSE4.1: the tests check
   that both give the same bytes. */
int ipk_resample_rgba_premultiplied_scalar(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                           uint8_t *dst, int dst_w, int dst_h, size_t dst_stride);

/* Integer box reduction by `factor` in both axes (each output pixel averages factor x factor inputs;
   the last row/column averages what remains). dst is ceil(src_w/factor) x ceil(src_h/factor). */
void ipk_box_reduce_rgba(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                         uint8_t *dst, size_t dst_stride, int factor);
/* Enlarges premultiplied RGBA8 bilinearly, with 8-bit fixed-point weights and pixel centres aligned as stb
   does: dst_w >= src_w and dst_h >= src_h. Cheaper still than the resampler above, which matters for
   animations, whose every frame is scaled. Returns 0, or -1 when its two row buffers cannot be allocated. */
int ipk_upscale_bilinear_rgba(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                              uint8_t *dst, int dst_w, int dst_h, size_t dst_stride);
/* The same enlargement with each source row interpolated one pixel at a time, as on a CPU without SSE4.1: the
   tests check that both give the same bytes. */
int ipk_upscale_bilinear_rgba_scalar(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                     uint8_t *dst, int dst_w, int dst_h, size_t dst_stride);

#endif
