/* What the decode anchors share: read FILE into memory, decode it once to warm up, then N times, and print the
 * median thread-CPU time (as `sample-cli bench decode` measures ours). An anchor defines ANCHOR_NAME (the label
 * it prints), includes this file, and defines `decode` (0 on success). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int decode(const uint8_t *data, size_t size);

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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
    if (decode(data, size)) { fprintf(stderr, ANCHOR_NAME " could not decode %s\n", argv[1]); return 1; }
    for (int i = 0; i < n; i++) {
        double start = now_ms();
        decode(data, size);
        times[i] = now_ms() - start;
    }
    qsort(times, n, sizeof(double), compare);
    printf(ANCHOR_NAME "\tmedian_ms=%.3f\n", times[n / 2]);
    return 0;
}
