/* PNG encoding into memory with libpng, under setjmp. */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>
#include "ipk_png.h"

typedef struct {
    uint8_t *bytes;
    size_t length, capacity;
    int failed;
} growable;

static void write_bytes(png_structp png, png_bytep data, png_size_t length) {
    growable *out = png_get_io_ptr(png);
    if (out->length + length > out->capacity) {
        size_t capacity = out->capacity ? out->capacity : 65536;
        while (capacity < out->length + length) capacity *= 2;
        uint8_t *grown = realloc(out->bytes, capacity);
        if (!grown) png_error(png, "out of memory while encoding");
        out->bytes = grown;
        out->capacity = capacity;
    }
    memcpy(out->bytes + out->length, data, length);
    out->length += length;
}

static void flush_bytes(png_structp png) { (void)png; }

static void on_error(png_structp png, png_const_charp message) {
    char *buffer = png_get_error_ptr(png);
    if (buffer) strncpy(buffer, message ? message : "libpng error", 199);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp message) { (void)png; (void)message; }

int ipk_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int channels,
                   int interlaced, uint8_t **out, size_t *out_length, char *message, size_t message_capacity) {
    char error[200] = {0};
    growable buffer = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, error, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    /* One row in the output layout; volatile because it is assigned after setjmp. */
    uint8_t *volatile row = NULL;
    *out = NULL;
    *out_length = 0;
    if (!png || !info || setjmp(png_jmpbuf(png))) {
        if (message && message_capacity) {
            strncpy(message, error[0] ? error : "could not start libpng", message_capacity - 1);
            message[message_capacity - 1] = 0;
        }
        png_destroy_write_struct(&png, &info);
        free(buffer.bytes);
        free(row);
        return -1;
    }
    png_set_write_fn(png, &buffer, write_bytes, flush_bytes);
    int color = channels == 4 ? PNG_COLOR_TYPE_RGBA : channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY;
    png_set_IHDR(png, info, width, height, 8, color, interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    int passes = png_set_interlace_handling(png);
    row = malloc((size_t)width * 4);
    if (!row) png_error(png, "out of memory while encoding");
    for (int pass = 0; pass < passes; pass++) {
        for (uint32_t y = 0; y < height; y++) {
            const uint8_t *source = pixels + (size_t)y * stride;
            for (uint32_t x = 0; x < width; x++) {
                const uint8_t *p = source + (size_t)x * 4;
                if (channels == 4) memcpy(row + x * 4, p, 4);
                else if (channels == 3) memcpy(row + x * 3, p, 3);
                else row[x] = (uint8_t)((p[0] * 77 + p[1] * 150 + p[2] * 29 + 128) >> 8);   /* BT.601 luma */
            }
            png_write_row(png, row);
        }
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);
    *out = buffer.bytes;
    *out_length = buffer.length;
    return 0;
}

void ipk_png_free(void *buffer) { free(buffer); }
