#include "CCodecsOnDemand.h"
#include "on_demand.h"

#include <jxl/version.h>
#include <stdio.h>

#define IPK_TABLE jxl

#define IPK_JXL_FUNCTIONS(X, V)                                                                                   \
    X(JxlDecoder *, JxlDecoderCreate, (const JxlMemoryManager *memory_manager), (memory_manager))                \
    V(JxlDecoderDestroy, (JxlDecoder *dec), (dec))                                                               \
    X(JxlDecoderStatus, JxlDecoderSubscribeEvents, (JxlDecoder *dec, int events_wanted), (dec, events_wanted))   \
    X(JxlDecoderStatus, JxlDecoderSetKeepOrientation, (JxlDecoder *dec, JXL_BOOL skip), (dec, skip))             \
    X(JxlDecoderStatus, JxlDecoderSetUnpremultiplyAlpha, (JxlDecoder *dec, JXL_BOOL unpremul), (dec, unpremul))  \
    X(JxlDecoderStatus, JxlDecoderSetProgressiveDetail, (JxlDecoder *dec, JxlProgressiveDetail detail),          \
      (dec, detail))                                                                                             \
    X(JxlDecoderStatus, JxlDecoderSetInput, (JxlDecoder *dec, const uint8_t *data, size_t size),                 \
      (dec, data, size))                                                                                         \
    V(JxlDecoderCloseInput, (JxlDecoder *dec), (dec))                                                            \
    X(size_t, JxlDecoderReleaseInput, (JxlDecoder *dec), (dec))                                                  \
    X(JxlDecoderStatus, JxlDecoderProcessInput, (JxlDecoder *dec), (dec))                                        \
    X(JxlDecoderStatus, JxlDecoderGetBasicInfo, (const JxlDecoder *dec, JxlBasicInfo *info), (dec, info))        \
    X(JxlDecoderStatus, JxlDecoderGetFrameHeader, (const JxlDecoder *dec, JxlFrameHeader *header),               \
      (dec, header))                                                                                             \
    X(JxlDecoderStatus, JxlDecoderImageOutBufferSize,                                                            \
      (const JxlDecoder *dec, const JxlPixelFormat *format, size_t *size), (dec, format, size))                  \
    X(JxlDecoderStatus, JxlDecoderSetImageOutBuffer,                                                             \
      (JxlDecoder *dec, const JxlPixelFormat *format, void *buffer, size_t size), (dec, format, buffer, size))    \
    X(JxlDecoderStatus, JxlDecoderFlushImage, (JxlDecoder *dec), (dec))

static struct {
    IPK_JXL_FUNCTIONS(IPK_POINTER, IPK_VOID_POINTER)
} jxl;

static char error[256];

/* libjxl 0.x changes its ABI with each minor version (its file name carries both numbers): the library must
   have the major and minor version of the headers. */
static int version_matches(void *handle) {
    uint32_t (*version)(void) = (uint32_t(*)(void))dlsym(handle, "JxlDecoderVersion");
    if (!version) return 0;
    uint32_t v = version();
    return v / 1000000 == JPEGXL_MAJOR_VERSION && v / 1000 % 1000 == JPEGXL_MINOR_VERSION;
}

static const char *open_and_look_up(void) {
    char name[32];
    if (JPEGXL_MAJOR_VERSION == 0) {
        snprintf(name, sizeof name, "libjxl.so.0.%d", JPEGXL_MINOR_VERSION);
    } else {
        snprintf(name, sizeof name, "libjxl.so.%d", JPEGXL_MAJOR_VERSION);
    }
    const char *const names[] = {name, "libjxl.so", NULL};
    static const ipk_symbol symbols[] = {IPK_JXL_FUNCTIONS(IPK_SYMBOL_X, IPK_SYMBOL_V)};
    return ipk_load_library(names, version_matches, "libjxl", symbols, sizeof symbols / sizeof *symbols, error,
                            sizeof error);
}

IPK_LOAD_ONCE(ipk_jxl_load, open_and_look_up)

IPK_JXL_FUNCTIONS(IPK_WRAPPER, IPK_VOID_WRAPPER)
