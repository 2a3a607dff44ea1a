#ifndef IPK_CODECS_H
#define IPK_CODECS_H
/* ImagePipelineKit's C layer: the only place libjpeg/libpng are called where they can longjmp. */
#include "ipk_resize.h"
#endif
