/* JPEG encoding from RGBA rows with libjpeg, under the same setjmp error manager as decoding. */
#include <stdlib.h>
#include <string.h>
#include "jpeg_common.h"

int ipk_jpeg_encode_rgba(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
                         int quality, int progressive, int grayscale,
                         uint8_t **out, size_t *out_length, char *message, size_t message_capacity) {
    struct jpeg_compress_struct cinfo;
    ipk_jpeg_error_mgr err;
    /* jpeg_mem_dest grows this buffer with malloc; volatile because it changes after setjmp. */
    unsigned char *volatile buffer = NULL;
    unsigned long volatile length = 0;
    *out = NULL;
    *out_length = 0;
    cinfo.err = ipk_jpeg_error_mgr_init(&err);
    if (setjmp(err.jump)) {
        if (message && message_capacity) {
            strncpy(message, err.message, message_capacity - 1);
            message[message_capacity - 1] = 0;
        }
        jpeg_destroy_compress(&cinfo);
        free(buffer);
        return -1;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, (unsigned char **)&buffer, (unsigned long *)&length);
    cinfo.image_width = width;
    cinfo.image_height = height;
    cinfo.input_components = 4;
    cinfo.in_color_space = JCS_EXT_RGBX;
    jpeg_set_defaults(&cinfo);
    if (grayscale) jpeg_set_colorspace(&cinfo, JCS_GRAYSCALE);
    jpeg_set_quality(&cinfo, quality < 1 ? 1 : quality > 100 ? 100 : quality, TRUE);
    cinfo.optimize_coding = TRUE;
    if (progressive) jpeg_simple_progression(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)cinfo.next_scanline * stride);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    *out = buffer;
    *out_length = length;
    return 0;
}

void ipk_jpeg_free(void *buffer) { free(buffer); }
