#ifndef IPK_JPEG_H
#define IPK_JPEG_H
#include <stdint.h>
#include <stddef.h>

/* libjpeg behind a setjmp error manager. Swift never sees a longjmp, and libjpeg's default error_exit (which
   calls exit()) is never installed: every entry point below returns a status instead. */

/* What went wrong, for the Swift error mapping. */
typedef enum {
    IPK_JPEG_FAILURE_NONE = 0,
    IPK_JPEG_FAILURE_CORRUPT = 1,      /* not a valid JPEG stream */
    IPK_JPEG_FAILURE_UNSUPPORTED = 2,  /* valid, but 12-bit, lossless or another process libjpeg lacks */
    IPK_JPEG_FAILURE_MEMORY = 3,       /* libjpeg's working memory would pass the session's ceiling */
    IPK_JPEG_FAILURE_TOO_MANY_SCANS = 4,
    IPK_JPEG_FAILURE_INTERRUPTED = 5   /* the stop check said to stop (nobody wants the image any more) */
} ipk_jpeg_failure;

/* What ipk_jpeg_decoder_advance achieved. */
typedef enum {
    IPK_JPEG_ERROR = -1,      /* see ipk_jpeg_info.failure and .message; the decoder is dead */
    IPK_JPEG_NEED_MORE = 0,   /* suspended: feed more bytes (or mark the input final) */
    IPK_JPEG_HEADER = 1,      /* headers parsed: read the info, then configure and attach a canvas */
    IPK_JPEG_PROGRESS = 2,    /* new rows (sequential) or a new complete scan (progressive) can be rendered */
    IPK_JPEG_COMPLETE = 3     /* the whole image is in the canvas */
} ipk_jpeg_status;

typedef struct {
    /* Set once the headers are parsed. */
    uint32_t width, height;         /* stored dimensions, before scaling and EXIF orientation */
    int components;
    int color_space;                /* J_COLOR_SPACE of the file: 1 gray, 2 RGB, 3 YCbCr, 4 CMYK, 5 YCCK */
    int progressive;
    int arithmetic;                 /* arithmetic-coded: decoded only once all bytes are in */
    unsigned long long coefficient_bytes; /* working memory for multi-scan files (0 for single-scan) */
    const uint8_t *exif;            /* APP1 "Exif\0\0" payload, or NULL; valid until destroy */
    size_t exif_length;
    /* Set by ipk_jpeg_decoder_configure. */
    uint32_t output_width, output_height;
    /* Progress. */
    uint32_t rows_decoded;          /* sequential output: rows already in the canvas */
    int scans_completed;            /* progressive input, buffered mode: scans fully in the coefficients */
    int input_scan_number;          /* libjpeg's: the scan the input is in (any mode) */
    int input_complete;             /* EOI (real, or the fake one after truncation) was reached */
    int truncated;                  /* the data ended early and libjpeg filled in the rest */
    int warnings;                   /* corrupt-data warnings libjpeg recovered from */
    ipk_jpeg_failure failure;
    char message[200];
} ipk_jpeg_info;

typedef struct ipk_jpeg_decoder ipk_jpeg_decoder;

/* A decoder whose libjpeg working memory may not exceed max_memory bytes (0: libjpeg's default). */
ipk_jpeg_decoder *ipk_jpeg_decoder_create(long max_memory);
void ipk_jpeg_decoder_destroy(ipk_jpeg_decoder *decoder);
const ipk_jpeg_info *ipk_jpeg_decoder_info(const ipk_jpeg_decoder *decoder);

/* A function asked about every 64K output pixels; nonzero stops the decode (IPK_JPEG_ERROR with
   IPK_JPEG_FAILURE_INTERRUPTED; the decoder is dead). NULL (the default) never stops. */
void ipk_jpeg_decoder_set_stop_check(ipk_jpeg_decoder *decoder, int (*should_stop)(void));

/* Appends bytes (copied). Returns 0, or -1 when the input buffer cannot grow. */
int ipk_jpeg_decoder_feed(ipk_jpeg_decoder *decoder, const uint8_t *bytes, size_t length);
/* The whole file, read where it lies instead of copied into the decoder's buffer: the bytes must stay valid
   and unchanged until decoding has ended (complete, or an error). Only on a decoder fed nothing before, and
   nothing can be fed after (both -1). set_final still marks the end. */
int ipk_jpeg_decoder_feed_whole(ipk_jpeg_decoder *decoder, const uint8_t *bytes, size_t length);
/* No more bytes will come: libjpeg sees a fake EOI where the data stops (and warns). */
void ipk_jpeg_decoder_set_final(ipk_jpeg_decoder *decoder);

/* Decodes as far as the bytes allow. After IPK_JPEG_HEADER, call configure and set_canvas before advancing. */
ipk_jpeg_status ipk_jpeg_decoder_advance(ipk_jpeg_decoder *decoder);

/* Chooses DCT scaling (scale_denom 1, 2, 4 or 8) and whether to keep coefficients for progressive renders
   (buffered = 1, only useful for progressive files fed incrementally). Sets output_width/height.
   Returns 0, or -1 on error. */
int ipk_jpeg_decoder_configure(ipk_jpeg_decoder *decoder, int scale_denom, int buffered);

/* The RGBA8 buffer (output_width x output_height, rows `stride` bytes apart) the decoder writes into.
   Owned by the caller; must outlive the decoder or the next set_canvas. */
void ipk_jpeg_decoder_set_canvas(ipk_jpeg_decoder *decoder, uint8_t *canvas, size_t stride);

/* Buffered progressive decoding only: writes the best image the coefficients received so far give into the
   canvas. Returns 1 when it rendered, 0 when no scan is complete yet, -1 on error. Never waits for input. */
int ipk_jpeg_decoder_render_progressive(ipk_jpeg_decoder *decoder);

/* Encodes RGBA8 (alpha ignored: premultiplied pixels come out as if composited over black) to JPEG.
   quality 1...100; progressive and grayscale are 0/1. On success returns 0 and a malloc'd buffer in *out
   (free with ipk_jpeg_free); on failure -1 and a message in `message`. */
int ipk_jpeg_encode_rgba(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
                         int quality, int progressive, int grayscale,
                         uint8_t **out, size_t *out_length, char *message, size_t message_capacity);
void ipk_jpeg_free(void *buffer);
#endif
