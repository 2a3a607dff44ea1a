/* The libjxl anchor for the JPEG XL decode benchmark: what djxl does with one thread before writing its output
 * (the whole file in memory, every frame to 8-bit RGBA), timed in thread CPU like `sample-cli bench decode`.
 * Prints the median of N decodes after one warm-up.
 *   jxl_decode_bench FILE N */
#include <jxl/decode.h>
#define ANCHOR_NAME "libjxl"
#include "decode_bench_main.h"

static int decode(const uint8_t *data, size_t size) {
    JxlDecoder *decoder = JxlDecoderCreate(NULL);
    JxlPixelFormat format = {4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    uint8_t *pixels = NULL;
    int status = 1;
    JxlDecoderSubscribeEvents(decoder, JXL_DEC_BASIC_INFO | JXL_DEC_FULL_IMAGE);
    JxlDecoderSetInput(decoder, data, size);
    JxlDecoderCloseInput(decoder);
    for (;;) {
        JxlDecoderStatus event = JxlDecoderProcessInput(decoder);
        if (event == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            size_t bytes;
            JxlDecoderImageOutBufferSize(decoder, &format, &bytes);
            free(pixels);
            pixels = malloc(bytes);
            JxlDecoderSetImageOutBuffer(decoder, &format, pixels, bytes);
        } else if (event == JXL_DEC_SUCCESS) {
            status = 0;
            break;
        } else if (event != JXL_DEC_BASIC_INFO && event != JXL_DEC_FULL_IMAGE) {
            break;
        }
    }
    free(pixels);
    JxlDecoderDestroy(decoder);
    return status;
}
