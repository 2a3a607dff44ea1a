#include <stddef.h>
#include <stdio.h>
#include <png.h>
