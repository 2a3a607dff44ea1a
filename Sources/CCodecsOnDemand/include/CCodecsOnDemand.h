/* libjxl and libavif, loaded on first use.

   The two libraries and what they pull in (libhwy, libaom, librav1e, libdav1d, libgav1, libbrotli) cost every
   process about 7 ms of CPU at start-up when linked: the dynamic loader resolves their symbols, and libhwy
   calibrates its timer in a constructor. Few processes ever decode AVIF or JPEG XL, so the binary does not
   link them; the first decode of either format loads its library with dlopen and resolves the calls below.

   Each ipk_..._load function loads its library once per process and returns NULL when it is ready, or a
   message saying why it is not (not installed, or a version other than the headers this was built with).
   The wrappers may be called only after their load returned NULL. */
#ifndef IPK_CODECS_ON_DEMAND_H
#define IPK_CODECS_ON_DEMAND_H

#include <stddef.h>
#include <stdint.h>
#include <avif/avif.h>
#include <jxl/decode.h>

/* Opens the first of `names` (NULL-terminated, at least one) that loads and whose version `matches` accepts (called with the
   dlopen handle), closing the others. Returns the handle, or NULL with a message in `error` (of `error_size`
   bytes) that says whether the library is missing or of another version. */
void *ipk_open_library(const char *const *names, int (*matches)(void *handle), const char *library, char *error,
                       size_t error_size);

const char *ipk_jxl_load(void);

JxlDecoder *ipk_JxlDecoderCreate(const JxlMemoryManager *memory_manager);
void ipk_JxlDecoderDestroy(JxlDecoder *dec);
JxlDecoderStatus ipk_JxlDecoderSubscribeEvents(JxlDecoder *dec, int events_wanted);
JxlDecoderStatus ipk_JxlDecoderSetKeepOrientation(JxlDecoder *dec, JXL_BOOL skip_reorientation);
JxlDecoderStatus ipk_JxlDecoderSetUnpremultiplyAlpha(JxlDecoder *dec, JXL_BOOL unpremul_alpha);
JxlDecoderStatus ipk_JxlDecoderSetProgressiveDetail(JxlDecoder *dec, JxlProgressiveDetail detail);
JxlDecoderStatus ipk_JxlDecoderSetInput(JxlDecoder *dec, const uint8_t *data, size_t size);
void ipk_JxlDecoderCloseInput(JxlDecoder *dec);
size_t ipk_JxlDecoderReleaseInput(JxlDecoder *dec);
JxlDecoderStatus ipk_JxlDecoderProcessInput(JxlDecoder *dec);
JxlDecoderStatus ipk_JxlDecoderGetBasicInfo(const JxlDecoder *dec, JxlBasicInfo *info);
JxlDecoderStatus ipk_JxlDecoderGetFrameHeader(const JxlDecoder *dec, JxlFrameHeader *header);
JxlDecoderStatus ipk_JxlDecoderImageOutBufferSize(const JxlDecoder *dec, const JxlPixelFormat *format, size_t *size);
JxlDecoderStatus ipk_JxlDecoderSetImageOutBuffer(JxlDecoder *dec, const JxlPixelFormat *format, void *buffer,
                                                 size_t size);
JxlDecoderStatus ipk_JxlDecoderFlushImage(JxlDecoder *dec);

const char *ipk_avif_load(void);

avifDecoder *ipk_avifDecoderCreate(void);
void ipk_avifDecoderDestroy(avifDecoder *decoder);
void ipk_avifDecoderSetIO(avifDecoder *decoder, avifIO *io);
avifResult ipk_avifDecoderParse(avifDecoder *decoder);
avifResult ipk_avifDecoderNextImage(avifDecoder *decoder);
void ipk_avifRGBImageSetDefaults(avifRGBImage *rgb, const avifImage *image);
avifResult ipk_avifImageYUVToRGB(const avifImage *image, avifRGBImage *rgb);
const char *ipk_avifResultToString(avifResult result);
const char *ipk_avifCodecName(avifCodecChoice choice, avifCodecFlags flags);
avifImage *ipk_avifImageCreate(uint32_t width, uint32_t height, uint32_t depth, avifPixelFormat format);
void ipk_avifImageDestroy(avifImage *image);
avifResult ipk_avifImageRGBToYUV(avifImage *image, const avifRGBImage *rgb);
avifEncoder *ipk_avifEncoderCreate(void);
void ipk_avifEncoderDestroy(avifEncoder *encoder);
avifResult ipk_avifEncoderWrite(avifEncoder *encoder, const avifImage *image, avifRWData *output);
void ipk_avifRWDataFree(avifRWData *raw);

#endif
