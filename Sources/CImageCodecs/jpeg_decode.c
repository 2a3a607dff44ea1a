/* Incremental JPEG decoding with libjpeg: a suspending source manager over a growable buffer (or over the
   caller's bytes, when a one-shot decode has the whole file), sequential
   output row by row, and buffered-image mode for progressive files so every complete scan can be rendered
   from partial data. Every libjpeg call runs under setjmp (jpeg_common.h). */
#include <stdlib.h>
#include <string.h>
#include "jpeg_common.h"
#include "ipk_jpeg.h"

/* A hostile progressive file can hold thousands of tiny scans, each costing a pass over the coefficients.
   Real encoders emit at most a few dozen. */
#define IPK_JPEG_MAX_SCANS 500

typedef struct {
    struct jpeg_source_mgr pub;
    struct ipk_jpeg_decoder *owner;
} ipk_source;

struct ipk_jpeg_decoder {
    struct jpeg_decompress_struct cinfo;
    ipk_jpeg_error_mgr err;
    ipk_source source;
    int created;
    int dead;

    /* Input bytes not yet consumed by libjpeg; consumed bytes are dropped on the next feed. */
    uint8_t *buffer;
    size_t length, capacity;
    int borrowed;   /* the input is the caller's whole file, read where it lies (ipk_jpeg_decoder_feed_whole) */
    size_t pending_skip;   /* bytes skip_input_data asked for beyond what had arrived */
    int final;

    enum { STAGE_HEADER, STAGE_CONFIGURE, STAGE_START, STAGE_SEQUENTIAL, STAGE_FINISH, STAGE_BUFFERED,
           STAGE_DONE } stage;
    int buffered;
    uint8_t *canvas;
    size_t stride;
    int (*should_stop)(void);
    size_t pixels_since_stop_check;
    int interrupted;
    ipk_jpeg_info info;
};

/* ---- source manager ---------------------------------------------------------------------------------- */

static void source_init(j_decompress_ptr cinfo) { (void)cinfo; }
static void source_term(j_decompress_ptr cinfo) { (void)cinfo; }

static const JOCTET fake_eoi[2] = { 0xFF, JPEG_EOI };

static boolean source_fill(j_decompress_ptr cinfo) {
    ipk_source *src = (ipk_source *)cinfo->src;
    struct ipk_jpeg_decoder *d = src->owner;
    if (!d->final) return FALSE;   /* suspend: libjpeg backs up and retries after the next feed */
    /* The data ended: let libjpeg finish with what it has, as a browser shows a truncated photo. */
    WARNMS(cinfo, JWRN_JPEG_EOF);
    d->info.truncated = 1;
    src->pub.next_input_byte = fake_eoi;
    src->pub.bytes_in_buffer = 2;
    return TRUE;
}

static void source_skip(j_decompress_ptr cinfo, long count) {
    ipk_source *src = (ipk_source *)cinfo->src;
    if (count <= 0) return;
    if ((size_t)count <= src->pub.bytes_in_buffer) {
        src->pub.next_input_byte += count;
        src->pub.bytes_in_buffer -= (size_t)count;
    } else {
        src->owner->pending_skip += (size_t)count - src->pub.bytes_in_buffer;
        src->pub.next_input_byte += src->pub.bytes_in_buffer;
        src->pub.bytes_in_buffer = 0;
    }
}

/* ---- life cycle -------------------------------------------------------------------------------------- */

static int fail(struct ipk_jpeg_decoder *d) {
    d->dead = 1;
    if (d->interrupted) {
        d->info.failure = IPK_JPEG_FAILURE_INTERRUPTED;
        strcpy(d->info.message, "interrupted");
        return -1;
    }
    d->info.failure = ipk_jpeg_classify(&d->err);
    memcpy(d->info.message, d->err.message, sizeof d->info.message);
    d->info.message[sizeof d->info.message - 1] = 0;
    return -1;
}

ipk_jpeg_decoder *ipk_jpeg_decoder_create(long max_memory) {
    struct ipk_jpeg_decoder *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->cinfo.err = ipk_jpeg_error_mgr_init(&d->err);
    if (setjmp(d->err.jump)) {
        if (d->created) jpeg_destroy_decompress(&d->cinfo);
        free(d);
        return NULL;
    }
    jpeg_create_decompress(&d->cinfo);
    d->created = 1;
    if (max_memory > 0) d->cinfo.mem->max_memory_to_use = max_memory;
    d->source.owner = d;
    d->source.pub.init_source = source_init;
    d->source.pub.fill_input_buffer = source_fill;
    d->source.pub.skip_input_data = source_skip;
    d->source.pub.resync_to_restart = jpeg_resync_to_restart;
    d->source.pub.term_source = source_term;
    d->cinfo.src = &d->source.pub;
    /* Keep APP1 segments: EXIF orientation lives there. */
    jpeg_save_markers(&d->cinfo, JPEG_APP0 + 1, 0xFFFF);
    return d;
}

void ipk_jpeg_decoder_destroy(ipk_jpeg_decoder *d) {
    if (!d) return;
    if (d->created) jpeg_destroy_decompress(&d->cinfo);
    free(d->buffer);
    free(d);
}

const ipk_jpeg_info *ipk_jpeg_decoder_info(const ipk_jpeg_decoder *d) { return &d->info; }

int ipk_jpeg_decoder_feed_whole(ipk_jpeg_decoder *d, const uint8_t *bytes, size_t length) {
    if (d->dead || d->final || d->borrowed || d->length || d->pending_skip) return -1;
    d->borrowed = 1;
    d->source.pub.next_input_byte = bytes;
    d->source.pub.bytes_in_buffer = length;
    return 0;
}

int ipk_jpeg_decoder_feed(ipk_jpeg_decoder *d, const uint8_t *bytes, size_t length) {
    if (d->dead || d->final || length == 0) return 0;
    if (d->borrowed) return -1;
    struct jpeg_source_mgr *pub = &d->source.pub;
    /* Drop what libjpeg has consumed: after a suspension it never looks behind next_input_byte. */
    size_t unread = pub->bytes_in_buffer;
    if (d->buffer && unread && pub->next_input_byte != d->buffer)
        memmove(d->buffer, pub->next_input_byte, unread);
    d->length = unread;
    /* Honour a skip that ran past the data we had. */
    if (d->pending_skip) {
        size_t skipped = d->pending_skip < length ? d->pending_skip : length;
        d->pending_skip -= skipped;
        bytes += skipped;
        length -= skipped;
    }
    if (d->length + length > d->capacity) {
        size_t capacity = d->capacity ? d->capacity : 4096;
        while (capacity < d->length + length) {
            if (capacity > SIZE_MAX / 2) return -1;
            capacity *= 2;
        }
        uint8_t *grown = realloc(d->buffer, capacity);
        if (!grown) return -1;
        d->buffer = grown;
        d->capacity = capacity;
    }
    if (length) memcpy(d->buffer + d->length, bytes, length);
    d->length += length;
    pub->next_input_byte = d->buffer;
    pub->bytes_in_buffer = d->length;
    return 0;
}

void ipk_jpeg_decoder_set_final(ipk_jpeg_decoder *d) { d->final = 1; }

/* ---- header and configuration ------------------------------------------------------------------------ */

static void read_header_info(struct ipk_jpeg_decoder *d) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    d->info.width = c->image_width;
    d->info.height = c->image_height;
    d->info.components = c->num_components;
    d->info.color_space = c->jpeg_color_space;
    d->info.progressive = c->progressive_mode;
    d->info.arithmetic = c->arith_code;
    /* Multi-scan files keep every DCT coefficient until the end: 64 of them per block, 2 bytes each. */
    if (c->progressive_mode || jpeg_has_multiple_scans(c)) {
        unsigned long long bytes = 0;
        for (int i = 0; i < c->num_components; i++) {
            jpeg_component_info *comp = &c->comp_info[i];
            unsigned long long w = comp->width_in_blocks + comp->h_samp_factor;   /* rounded up to an iMCU */
            unsigned long long h = comp->height_in_blocks + comp->v_samp_factor;
            bytes += w * h * DCTSIZE2 * sizeof(JCOEF);
        }
        d->info.coefficient_bytes = bytes;
    }
    for (jpeg_saved_marker_ptr m = c->marker_list; m; m = m->next) {
        if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && memcmp(m->data, "Exif\0\0", 6) == 0) {
            d->info.exif = m->data;
            d->info.exif_length = m->data_length;
            break;
        }
    }
}

int ipk_jpeg_decoder_configure(ipk_jpeg_decoder *d, int scale_denom, int buffered) {
    if (d->dead || d->stage != STAGE_CONFIGURE) return -1;
    struct jpeg_decompress_struct *c = &d->cinfo;
    if (setjmp(d->err.jump)) return fail(d);
    switch (c->jpeg_color_space) {
    case JCS_CMYK:
    case JCS_YCCK:
        c->out_color_space = JCS_CMYK;   /* converted to RGBA in place, row by row */
        break;
    default:
        c->out_color_space = JCS_EXT_RGBA;
        break;
    }
    c->scale_num = 1;
    c->scale_denom = (unsigned)(scale_denom == 2 || scale_denom == 4 || scale_denom == 8 ? scale_denom : 1);
    d->buffered = buffered && c->progressive_mode;
    c->buffered_image = d->buffered ? TRUE : FALSE;
    jpeg_calc_output_dimensions(c);
    d->info.output_width = c->output_width;
    d->info.output_height = c->output_height;
    d->stage = STAGE_START;
    return 0;
}

void ipk_jpeg_decoder_set_stop_check(ipk_jpeg_decoder *d, int (*should_stop)(void)) {
    d->should_stop = should_stop;
}

void ipk_jpeg_decoder_set_canvas(ipk_jpeg_decoder *d, uint8_t *canvas, size_t stride) {
    d->canvas = canvas;
    d->stride = stride;
}

/* ---- pixels ------------------------------------------------------------------------------------------ */

/* CMYK rows arrive 4 bytes a pixel in the canvas; turn them into opaque RGBA in place. Adobe's encoders
   (the only common source of CMYK JPEGs) store the channels inverted. */
static void cmyk_to_rgba(struct ipk_jpeg_decoder *d, uint8_t *row) {
    int inverted = d->cinfo.saw_Adobe_marker;
    for (JDIMENSION x = 0; x < d->cinfo.output_width; x++, row += 4) {
        unsigned c = row[0], m = row[1], y = row[2], k = row[3];
        if (!inverted) { c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k; }
        row[0] = (uint8_t)((c * k + 127) / 255);
        row[1] = (uint8_t)((m * k + 127) / 255);
        row[2] = (uint8_t)((y * k + 127) / 255);
        row[3] = 255;
    }
}

/* Reads output rows into the canvas until the output is done or the input suspends. Returns 1 when every
   row is in. Must be called under setjmp: the stop check leaves through it. */
static int read_rows(struct ipk_jpeg_decoder *d) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    int cmyk = c->out_color_space == JCS_CMYK;
    while (c->output_scanline < c->output_height) {
        JSAMPROW rows[16];
        JDIMENSION first = c->output_scanline, count = c->output_height - first;
        if (count > 16) count = 16;
        for (JDIMENSION i = 0; i < count; i++) rows[i] = d->canvas + (size_t)(first + i) * d->stride;
        JDIMENSION read = jpeg_read_scanlines(c, rows, count);
        if (cmyk)
            for (JDIMENSION i = 0; i < read; i++) cmyk_to_rgba(d, rows[i]);
        if (read == 0) return 0;
        /* Asked every 64K pixels or so (a fraction of a millisecond of decoding), not after every call, which
           returns a row or two of a reduced decode: the check costs more than that row. */
        d->pixels_since_stop_check += (size_t)read * c->output_width;
        if (d->should_stop && d->pixels_since_stop_check >= 65536) {
            d->pixels_since_stop_check = 0;
            /* Out through the error path, as libjpeg's own errors leave: every caller runs under setjmp. */
            if (d->should_stop()) {
                d->interrupted = 1;
                longjmp(d->err.jump, 1);
            }
        }
    }
    return 1;
}

/* ---- the state machine ------------------------------------------------------------------------------- */

/* A preview is replaced within moments by a better one, so its output pass trades quality for speed. It skips
   block smoothing, which estimates the AC coefficients not received yet from the neighbouring blocks and costs
   about as much as the rest of the pass (the early scans then show as 8x8 blocks rather than blurred), and it
   uses the fast integer IDCT, whose rounding differs by a level or two. libjpeg allows changing both between
   the output passes of buffered-image mode; the final pass goes back to the accurate IDCT with smoothing, so
   the final image equals a one-shot decode. */
static void set_preview_pass_speed(struct jpeg_decompress_struct *c) {
    c->do_block_smoothing = FALSE;
    c->dct_method = JDCT_IFAST;
}

static void set_final_pass_quality(struct jpeg_decompress_struct *c) {
    c->do_block_smoothing = TRUE;
    c->dct_method = JDCT_ISLOW;
}

/* Consumes input in buffered mode until it suspends or reaches EOI; counts complete scans. */
static ipk_jpeg_status consume_buffered(struct ipk_jpeg_decoder *d) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    int before = d->info.scans_completed;
    for (;;) {
        int result = jpeg_consume_input(c);
        if (result == JPEG_SUSPENDED) break;
        if (result == JPEG_SCAN_COMPLETED) {
            d->info.scans_completed++;
            if (d->info.scans_completed > IPK_JPEG_MAX_SCANS) {
                d->dead = 1;
                d->info.failure = IPK_JPEG_FAILURE_TOO_MANY_SCANS;
                strcpy(d->info.message, "more progressive scans than any real encoder writes");
                return IPK_JPEG_ERROR;
            }
        }
        if (result == JPEG_REACHED_EOI) {
            d->info.input_complete = 1;
            break;
        }
    }
    if (d->info.input_complete) {
        /* The final output pass: every scan at full quality, then release libjpeg's state. */
        set_final_pass_quality(c);
        jpeg_start_output(c, c->input_scan_number);
        read_rows(d);
        jpeg_finish_output(c);
        jpeg_finish_decompress(c);
        d->info.rows_decoded = c->output_height;
        d->stage = STAGE_DONE;
        return IPK_JPEG_COMPLETE;
    }
    return d->info.scans_completed > before ? IPK_JPEG_PROGRESS : IPK_JPEG_NEED_MORE;
}

static ipk_jpeg_status advance_stage(struct ipk_jpeg_decoder *d);

ipk_jpeg_status ipk_jpeg_decoder_advance(ipk_jpeg_decoder *d) {
    if (d->dead) return IPK_JPEG_ERROR;
    struct jpeg_decompress_struct *c = &d->cinfo;
    if (setjmp(d->err.jump)) return (ipk_jpeg_status)fail(d);
    ipk_jpeg_status status = advance_stage(d);
    d->info.warnings = d->err.warnings;
    d->info.input_scan_number = c->input_scan_number;
    return status;
}

/* One step of the state machine; runs under the caller's setjmp. */
static ipk_jpeg_status advance_stage(struct ipk_jpeg_decoder *d) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    switch (d->stage) {
    case STAGE_HEADER: {
        int result = jpeg_read_header(c, TRUE);
        if (result == JPEG_SUSPENDED) return IPK_JPEG_NEED_MORE;
        if (result != JPEG_HEADER_OK) {   /* tables-only datastream: no image in it */
            d->dead = 1;
            d->info.failure = IPK_JPEG_FAILURE_CORRUPT;
            strcpy(d->info.message, "JPEG datastream contains no image");
            return IPK_JPEG_ERROR;
        }
        read_header_info(d);
        d->stage = STAGE_CONFIGURE;
        return IPK_JPEG_HEADER;
    }
    case STAGE_CONFIGURE:
        return IPK_JPEG_HEADER;   /* the caller has not configured yet */
    case STAGE_START:
        if (!d->canvas) return IPK_JPEG_HEADER;
        /* libjpeg's arithmetic decoder cannot suspend: it needs every byte before it starts. */
        if (c->arith_code && !d->final) return IPK_JPEG_NEED_MORE;
        if (!jpeg_start_decompress(c)) return IPK_JPEG_NEED_MORE;
        d->stage = d->buffered ? STAGE_BUFFERED : STAGE_SEQUENTIAL;
        return advance_stage(d);
    case STAGE_SEQUENTIAL: {
        JDIMENSION before = c->output_scanline;
        int done = read_rows(d);
        d->info.rows_decoded = c->output_scanline;
        if (!done) return c->output_scanline > before ? IPK_JPEG_PROGRESS : IPK_JPEG_NEED_MORE;
        d->stage = STAGE_FINISH;
        return advance_stage(d);
    }
    case STAGE_FINISH:
        /* Reads up to EOI; may suspend on trailing data. */
        if (!jpeg_finish_decompress(c)) return IPK_JPEG_NEED_MORE;
        d->info.input_complete = 1;
        d->stage = STAGE_DONE;
        return IPK_JPEG_COMPLETE;
    case STAGE_BUFFERED:
        return consume_buffered(d);
    case STAGE_DONE:
        return IPK_JPEG_COMPLETE;
    }
    return IPK_JPEG_ERROR;
}

int ipk_jpeg_decoder_render_progressive(ipk_jpeg_decoder *d) {
    if (d->dead) return -1;
    if (d->stage == STAGE_DONE) return 1;   /* the canvas already holds the final image */
    if (d->stage != STAGE_BUFFERED || !d->canvas) return 0;
    struct jpeg_decompress_struct *c = &d->cinfo;
    /* Output one scan behind the input: then neither the output pass nor jpeg_finish_output ever waits for
       input (so they cannot suspend), and the pass still uses every coefficient received so far. */
    if (c->input_scan_number < 2) return 0;
    if (setjmp(d->err.jump)) return fail(d);
    set_preview_pass_speed(c);
    jpeg_start_output(c, c->input_scan_number - 1);
    read_rows(d);
    jpeg_finish_output(c);
    return 1;
}
