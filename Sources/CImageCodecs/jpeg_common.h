/* The setjmp error manager every libjpeg call of ours runs under (private to CImageCodecs). */
#ifndef IPK_JPEG_COMMON_H
#define IPK_JPEG_COMMON_H
#include <setjmp.h>
#include <stdio.h>
#include <jpeglib.h>
#include <jerror.h>
#include "ipk_jpeg.h"

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int warnings;
} ipk_jpeg_error_mgr;

/* Installs handlers that longjmp on errors (never exit()), count warnings and print nothing. */
struct jpeg_error_mgr *ipk_jpeg_error_mgr_init(ipk_jpeg_error_mgr *err);

/* Maps the last error's message code to a failure kind. */
ipk_jpeg_failure ipk_jpeg_classify(const ipk_jpeg_error_mgr *err);
#endif
