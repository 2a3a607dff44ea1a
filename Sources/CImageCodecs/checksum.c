#include "ipk_checksum.h"
#include <pthread.h>
#include <string.h>
#if defined(__x86_64__)
#include <nmmintrin.h>
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

/* The reflected Castagnoli polynomial. */
#define CRC32C_POLYNOMIAL 0x82F63B78u

static uint32_t crc32c_table[256];
static pthread_once_t crc32c_table_once = PTHREAD_ONCE_INIT;

static void crc32c_make_table(void) {
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; bit++) crc = (crc >> 1) ^ (CRC32C_POLYNOMIAL & (0u - (crc & 1)));
        crc32c_table[byte] = crc;
    }
}

static uint32_t crc32c_portable(uint32_t crc, const uint8_t *bytes, size_t length) {
    pthread_once(&crc32c_table_once, crc32c_make_table);
    while (length--) crc = crc32c_table[(crc ^ *bytes++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_hardware(uint32_t crc, const uint8_t *bytes, size_t length) {
    uint64_t wide = crc;
    for (; length >= 8; bytes += 8, length -= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        wide = _mm_crc32_u64(wide, word);
    }
    crc = (uint32_t)wide;
    for (; length > 0; bytes++, length--) crc = _mm_crc32_u8(crc, *bytes);
    return crc;
}

static int crc32c_has_hardware(void) { return __builtin_cpu_supports("sse4.2"); }
#elif defined(__aarch64__)
__attribute__((target("+crc")))
static uint32_t crc32c_hardware(uint32_t crc, const uint8_t *bytes, size_t length) {
    for (; length >= 8; bytes += 8, length -= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        crc = __crc32cd(crc, word);
    }
    for (; length > 0; bytes++, length--) crc = __crc32cb(crc, *bytes);
    return crc;
}

static int crc32c_has_hardware(void) { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
#endif

uint32_t ipk_crc32c(uint32_t crc, const void *data, size_t length) {
    crc = ~crc;
#if defined(__x86_64__) || defined(__aarch64__)
    /* Asked once; threads that race to ask store the same answer. */
    static int hardware = -1;
    int known = __atomic_load_n(&hardware, __ATOMIC_RELAXED);
    if (known < 0) {
        known = crc32c_has_hardware();
        __atomic_store_n(&hardware, known, __ATOMIC_RELAXED);
    }
    crc = known ? crc32c_hardware(crc, data, length) : crc32c_portable(crc, data, length);
#else
    crc = crc32c_portable(crc, data, length);
#endif
    return ~crc;
}
