#include "CCodecsOnDemand.h"
#include "on_demand.h"

#include <stdio.h>
#include <string.h>

#define IPK_TABLE avif

#define IPK_AVIF_FUNCTIONS(X, V)                                                                                  \
    X(avifDecoder *, avifDecoderCreate, (void), ())                                                              \
    V(avifDecoderDestroy, (avifDecoder *decoder), (decoder))                                                     \
    V(avifDecoderSetIO, (avifDecoder *decoder, avifIO *io), (decoder, io))                                       \
    X(avifResult, avifDecoderParse, (avifDecoder *decoder), (decoder))                                           \
    X(avifResult, avifDecoderNextImage, (avifDecoder *decoder), (decoder))                                       \
    V(avifRGBImageSetDefaults, (avifRGBImage *rgb, const avifImage *image), (rgb, image))                        \
    X(avifResult, avifImageYUVToRGB, (const avifImage *image, avifRGBImage *rgb), (image, rgb))                  \
    X(const char *, avifResultToString, (avifResult result), (result))                                          \
    X(const char *, avifCodecName, (avifCodecChoice choice, avifCodecFlags flags), (choice, flags))              \
    X(avifImage *, avifImageCreate, (uint32_t width, uint32_t height, uint32_t depth, avifPixelFormat format),    \
      (width, height, depth, format))                                                                            \
    V(avifImageDestroy, (avifImage *image), (image))                                                             \
    X(avifResult, avifImageRGBToYUV, (avifImage *image, const avifRGBImage *rgb), (image, rgb))                  \
    X(avifEncoder *, avifEncoderCreate, (void), ())                                                              \
    V(avifEncoderDestroy, (avifEncoder *encoder), (encoder))                                                     \
    X(avifResult, avifEncoderWrite, (avifEncoder *encoder, const avifImage *image, avifRWData *output),          \
      (encoder, image, output))                                                                                  \
    V(avifRWDataFree, (avifRWData *raw), (raw))

static struct {
    IPK_AVIF_FUNCTIONS(IPK_POINTER, IPK_VOID_POINTER)
} avif;

static char error[256];

/* The decoder reads and writes libavif's structures (avifDecoder, avifImage, avifRGBImage) directly, whose
   layout may change between minor versions: the library must have the major and minor version of the headers. */
static int version_matches(void *handle) {
    const char *(*version)(void) = (const char *(*)(void))dlsym(handle, "avifVersion");
    if (!version) return 0;
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.", AVIF_VERSION_MAJOR, AVIF_VERSION_MINOR);
    return strncmp(version(), expected, strlen(expected)) == 0;
}

static const char *open_and_look_up(void) {
    /* libavif's file name carries an ABI number that its version does not tell; the version check above picks
       the one that matches. */
    const char *const names[] = {"libavif.so.16", "libavif.so.15", "libavif.so.14", "libavif.so.13", "libavif.so",
                                 NULL};
    static const ipk_symbol symbols[] = {IPK_AVIF_FUNCTIONS(IPK_SYMBOL_X, IPK_SYMBOL_V)};
    return ipk_load_library(names, version_matches, "libavif", symbols, sizeof symbols / sizeof *symbols, error,
                            sizeof error);
}

IPK_LOAD_ONCE(ipk_avif_load, open_and_look_up)

IPK_AVIF_FUNCTIONS(IPK_WRAPPER, IPK_VOID_WRAPPER)
