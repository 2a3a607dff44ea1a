/* Umbrella header of CImageCodecs: a header added to include/ must be listed here too (an explicit list
   makes SwiftPM rebuild the module when it changes; an umbrella directory can leave a stale module cache). */
#include "ipk_jpeg.h"
#include "ipk_pixels.h"
#include "ipk_png.h"
#include "ipk_resize.h"
