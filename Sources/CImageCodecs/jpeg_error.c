#include <string.h>
#include "jpeg_common.h"

static void on_error(j_common_ptr cinfo) {
    ipk_jpeg_error_mgr *err = (ipk_jpeg_error_mgr *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, err->message);
    longjmp(err->jump, 1);
}

static void on_message(j_common_ptr cinfo, int level) {
    /* level -1 is a corrupt-data warning libjpeg recovered from; trace messages (level >= 0) are ignored. */
    if (level < 0) ((ipk_jpeg_error_mgr *)cinfo->err)->warnings++;
}

static void on_output(j_common_ptr cinfo) { (void)cinfo; }

struct jpeg_error_mgr *ipk_jpeg_error_mgr_init(ipk_jpeg_error_mgr *err) {
    memset(err, 0, sizeof *err);
    jpeg_std_error(&err->pub);
    err->pub.error_exit = on_error;
    err->pub.emit_message = on_message;
    err->pub.output_message = on_output;
    return &err->pub;
}

ipk_jpeg_failure ipk_jpeg_classify(const ipk_jpeg_error_mgr *err) {
    switch (err->pub.msg_code) {
    case JERR_BAD_PRECISION:
    case JERR_SOF_UNSUPPORTED:
    case JERR_NOT_COMPILED:
    case JERR_ARITH_NOTIMPL:
    case JERR_CONVERSION_NOTIMPL:
        return IPK_JPEG_FAILURE_UNSUPPORTED;
    case JERR_OUT_OF_MEMORY:
    case JERR_NO_BACKING_STORE:
    case JERR_IMAGE_TOO_BIG:
    case JERR_WIDTH_OVERFLOW:
        return IPK_JPEG_FAILURE_MEMORY;
    default:
        return IPK_JPEG_FAILURE_CORRUPT;
    }
}
