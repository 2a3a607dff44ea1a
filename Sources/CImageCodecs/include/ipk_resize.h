#ifndef IPK_RESIZE_H
#define IPK_RESIZE_H
#include <stdint.h>
#include <stddef.h>

/* Resamples premultiplied RGBA8 with stb_image_resize (Mitchell down, Catmull-Rom up, clamped edges).
   Returns 0 on success, -1 when stb refuses (bad sizes or out of memory). */
int ipk_resize_rgba_premultiplied(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                  uint8_t *dst, int dst_w, int dst_h, size_t dst_stride);

/* Integer box reduction by `factor` in both axes (each output pixel averages factor x factor inputs;
   the last row/column averages what remains). dst is ceil(src_w/factor) x ceil(src_h/factor). */
void ipk_box_reduce_rgba(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                         uint8_t *dst, size_t dst_stride, int factor);
#endif
