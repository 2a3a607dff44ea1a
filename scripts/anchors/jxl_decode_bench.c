/* The libjxl anchor for the JPEG XL decode benchmark: what djxl does with one thread before writing its output
 * (the whole file in memory, every frame to 8-bit RGBA), timed in thread CPU like `sample-cli bench decode`.
 * Prints the median of N decodes after one warm-up.
 *   jxl_decode_bench FILE N */
#include <jxl/decode.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

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

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s FILE N\n", argv[0]); return 2; }
    FILE *file = fopen(argv[1], "rb");
    if (!file) { perror(argv[1]); return 1; }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    uint8_t *data = malloc(size);
    if (fread(data, 1, size, file) != (size_t)size) { perror("read"); return 1; }
    fclose(file);
    int n = atoi(argv[2]);
    double *times = malloc(sizeof(double) * n);
    if (decode(data, size)) { fprintf(stderr, "libjxl could not decode %s\n", argv[1]); return 1; }
    for (int i = 0; i < n; i++) {
        double start = now_ms();
        decode(data, size);
        times[i] = now_ms() - start;
    }
    qsort(times, n, sizeof(double), compare);
    printf("libjxl\tmedian_ms=%.3f\n", times[n / 2]);
    return 0;
}
