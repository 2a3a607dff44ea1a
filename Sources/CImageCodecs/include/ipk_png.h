#ifndef IPK_PNG_H
#define IPK_PNG_H
#include <stdint.h>
#include <stddef.h>

/* libpng's progressive reader behind setjmp: bytes are pushed as they arrive, rows land in a caller-owned
   RGBA8 canvas (straight alpha), and every libpng error comes back as a status, never a longjmp into Swift. */

typedef enum {
    IPK_PNG_ERROR = -1,      /* see ipk_png_info.message; the decoder is dead */
    IPK_PNG_NEED_MORE = 0,   /* every byte was taken; nothing new to show */
    IPK_PNG_PROGRESS = 1,    /* new rows are in the canvas */
    IPK_PNG_PASS = 2,        /* an Adam7 pass completed */
    IPK_PNG_COMPLETE = 3     /* IEND reached: the canvas holds the whole image */
} ipk_png_status;

typedef struct {
    uint32_t width, height;
    int interlaced;              /* Adam7 */
    int has_alpha;               /* an alpha channel or tRNS */
    int header_seen;             /* libpng accepted IHDR */
    int passes_completed;        /* Adam7: passes whose every row arrived (non-interlaced: 0, then 1 at the end) */
    uint32_t rows_completed;     /* non-interlaced: rows in the canvas */
    int complete;
    char message[200];
} ipk_png_info;

typedef struct ipk_png_decoder ipk_png_decoder;

/* A decoder writing width x height RGBA8 rows into `canvas` (rows `stride` bytes apart). The caller has read
   IHDR itself and checked its limits; libpng refuses an IHDR that differs (a later chunk cannot grow it). */
ipk_png_decoder *ipk_png_decoder_create(uint32_t width, uint32_t height, uint8_t *canvas, size_t stride,
                                        size_t max_chunk_bytes);
void ipk_png_decoder_destroy(ipk_png_decoder *decoder);
const ipk_png_info *ipk_png_decoder_info(const ipk_png_decoder *decoder);

/* Pushes bytes through libpng (not copied). Returns the most significant thing that happened. */
ipk_png_status ipk_png_decoder_push(ipk_png_decoder *decoder, const uint8_t *bytes, size_t length);

/* Encodes `width` x `height` RGBA8 rows (straight alpha). channels: 4 RGBA, 3 RGB, 1 gray. On success returns
   0 and a malloc'd buffer in *out (free with ipk_png_free); on failure -1 and a message. */
int ipk_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int channels,
                   int interlaced, uint8_t **out, size_t *out_length, char *message, size_t message_capacity);
void ipk_png_free(void *buffer);
#endif
