#include <stddef.h>
#include <stdio.h>
#include <gif_lib.h>
