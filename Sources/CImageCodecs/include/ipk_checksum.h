#ifndef IPK_CHECKSUM_H
#define IPK_CHECKSUM_H
#include <stdint.h>
#include <stddef.h>

/* CRC-32C (Castagnoli) of `length` bytes, continuing from `crc` (0 to start). The disk cache keeps one per file
   in its index and checks it on every read, so that a file a power cut left short or garbled is never served:
   cheaper than flushing each file to the disk. Uses the CPU's CRC32 instruction where there is one (SSE 4.2 on
   x86-64, the CRC extension on 64-bit ARM), several gigabytes a second; a table elsewhere. */
uint32_t ipk_crc32c(uint32_t crc, const void *data, size_t length);

#endif
