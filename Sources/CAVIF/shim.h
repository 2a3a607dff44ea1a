#include <stddef.h>
#include <stdint.h>
#include <avif/avif.h>
