/* The libavif anchor for the AVIF decode benchmark: what avifdec does before writing its output (read the
 * file from memory with one decoder thread, convert to 8-bit RGBA), timed in thread CPU like
 * `sample-cli bench decode`. Prints the median of N decodes after one warm-up.
 *   avif_decode_bench FILE N */
#include <avif/avif.h>
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
    if (decode(data, size)) { fprintf(stderr, "libavif could not decode %s\n", argv[1]); return 1; }
    for (int i = 0; i < n; i++) {
        double start = now_ms();
        decode(data, size);
        times[i] = now_ms() - start;
    }
    qsort(times, n, sizeof(double), compare);
    printf("libavif\tmedian_ms=%.3f\n", times[n / 2]);
    return 0;
}
