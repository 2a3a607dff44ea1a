#include <stddef.h>
#include <stdint.h>
#include <jxl/decode.h>
