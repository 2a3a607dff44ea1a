/* Incremental PNG decoding with libpng's progressive reader (png_process_data), under setjmp. */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>
#include "ipk_png.h"

struct ipk_png_decoder {
    png_structp png;
    png_infop info_ptr;
    uint8_t *canvas;
    size_t stride;
    int dead;
    int pass;                 /* the pass the last row belonged to */
    ipk_png_status event;     /* strongest event during the current push */
    ipk_png_info info;
};

static void raise_event(struct ipk_png_decoder *d, ipk_png_status event) {
    if (event > d->event) d->event = event;
}

static void on_error(png_structp png, png_const_charp message) {
    struct ipk_png_decoder *d = png_get_error_ptr(png);
    strncpy(d->info.message, message ? message : "libpng error", sizeof d->info.message - 1);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp message) { (void)png; (void)message; }

static void on_info(png_structp png, png_infop info) {
    struct ipk_png_decoder *d = png_get_progressive_ptr(png);
    png_uint_32 width, height;
    int depth, color, interlace;
    png_get_IHDR(png, info, &width, &height, &depth, &color, &interlace, NULL, NULL);
    if (width != d->info.width || height != d->info.height) png_error(png, "IHDR differs from the header read");
    d->info.interlaced = interlace == PNG_INTERLACE_ADAM7;
    d->info.has_alpha = (color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS);
    /* Everything becomes 8-bit RGBA: palettes and low bit depths expand, tRNS becomes alpha, 16-bit samples
       keep their high byte (as Chrome, Firefox and Pillow show them), gray becomes RGB, opaque images get
       A = 255. No gamma correction: browsers and the reference decoders show the stored values. */
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_gray_to_rgb(png);
    png_set_add_alpha(png, 0xFF, PNG_FILLER_AFTER);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)width * 4) png_error(png, "unexpected row size after transforms");
    d->info.header_seen = 1;
}

static void on_row(png_structp png, png_bytep row, png_uint_32 number, int pass) {
    struct ipk_png_decoder *d = png_get_progressive_ptr(png);
    if (!row || number >= d->info.height) return;
    /* Adam7 delivers each pass's rows; combine keeps what earlier passes wrote. */
    png_progressive_combine_row(png, d->canvas + (size_t)number * d->stride, row);
    if (d->info.interlaced) {
        if (pass != d->pass) {
            /* The first row of a later pass: every earlier pass is done. */
            d->pass = pass;
            if (pass > 0) {
                d->info.passes_completed = pass;
                raise_event(d, IPK_PNG_PASS);
            }
        }
    } else {
        d->info.rows_completed = number + 1;
    }
    raise_event(d, IPK_PNG_PROGRESS);
}

static void on_end(png_structp png, png_infop info) {
    (void)info;
    struct ipk_png_decoder *d = png_get_progressive_ptr(png);
    d->info.complete = 1;
    d->info.passes_completed = d->info.interlaced ? 7 : 1;
    d->info.rows_completed = d->info.height;
    raise_event(d, IPK_PNG_COMPLETE);
}

ipk_png_decoder *ipk_png_decoder_create(uint32_t width, uint32_t height, uint8_t *canvas, size_t stride,
                                        size_t max_chunk_bytes) {
    struct ipk_png_decoder *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->info.width = width;
    d->info.height = height;
    d->canvas = canvas;
    d->stride = stride;
    d->pass = -1;
    d->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, d, on_error, on_warning);
    if (!d->png) { free(d); return NULL; }
    d->info_ptr = png_create_info_struct(d->png);
    if (!d->info_ptr || setjmp(png_jmpbuf(d->png))) {
        png_destroy_read_struct(&d->png, d->info_ptr ? &d->info_ptr : NULL, NULL);
        free(d);
        return NULL;
    }
    /* Hostile ancillary chunks (huge zTXt/iCCP, thousands of sPLT) must not eat memory. */
    png_set_user_limits(d->png, width, height);
    png_set_chunk_cache_max(d->png, 1000);
    png_set_chunk_malloc_max(d->png, max_chunk_bytes);
    png_set_progressive_read_fn(d->png, d, on_info, on_row, on_end);
    return d;
}

void ipk_png_decoder_destroy(ipk_png_decoder *d) {
    if (!d) return;
    png_destroy_read_struct(&d->png, &d->info_ptr, NULL);
    free(d);
}

const ipk_png_info *ipk_png_decoder_info(const ipk_png_decoder *d) { return &d->info; }

ipk_png_status ipk_png_decoder_push(ipk_png_decoder *d, const uint8_t *bytes, size_t length) {
    if (d->dead) return IPK_PNG_ERROR;
    if (d->info.complete || length == 0) return d->info.complete ? IPK_PNG_COMPLETE : IPK_PNG_NEED_MORE;
    d->event = IPK_PNG_NEED_MORE;
    if (setjmp(png_jmpbuf(d->png))) {
        d->dead = 1;
        return IPK_PNG_ERROR;
    }
    png_process_data(d->png, d->info_ptr, (png_bytep)bytes, length);
    return d->event;
}
