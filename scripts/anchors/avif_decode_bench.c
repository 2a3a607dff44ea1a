/* The libavif anchor for the AVIF decode benchmark: what avifdec does before writing its output (read the
 * file from memory with one decoder thread, convert to 8-bit RGBA), timed in thread CPU like
 * `sample-cli bench decode`. Prints the median of N decodes after one warm-up.
 *   avif_decode_bench FILE N */
#include <avif/avif.h>
#define ANCHOR_NAME "libavif"
#include "decode_bench_main.h"

static int decode(const uint8_t *data, size_t size) {
    avifDecoder *decoder = avifDecoderCreate();
    avifImage *image = avifImageCreateEmpty();
    decoder->maxThreads = 1;
    int status = avifDecoderReadMemory(decoder, image, data, size) == AVIF_RESULT_OK ? 0 : 1;
    if (status == 0) {
        avifRGBImage rgb;
        avifRGBImageSetDefaults(&rgb, image);
        rgb.format = AVIF_RGB_FORMAT_RGBA;
        rgb.depth = 8;
        avifRGBImageAllocatePixels(&rgb);
        status = avifImageYUVToRGB(image, &rgb) == AVIF_RESULT_OK ? 0 : 1;
        avifRGBImageFreePixels(&rgb);
    }
    avifImageDestroy(image);
    avifDecoderDestroy(decoder);
    return status;
}
