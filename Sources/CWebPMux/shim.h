#include <stddef.h>
#include <stdio.h>
#include <webp/encode.h>
#include <webp/mux.h>
