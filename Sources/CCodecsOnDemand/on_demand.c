#include "CCodecsOnDemand.h"
#include "on_demand.h"

#include <stdio.h>

void *ipk_open_library(const char *const *names, int (*matches)(void *handle), const char *library, char *error,
                       size_t error_size) {
    int found_other_version = 0;
    const char *const *name = names;
    for (; *name; name++) {
        /* RTLD_LOCAL: the library's symbols stay out of the process's global namespace, as if never linked. */
        void *handle = dlopen(*name, RTLD_NOW | RTLD_LOCAL);
        if (!handle) continue;
        if (matches(handle)) return handle;
        found_other_version = 1;
        dlclose(handle);
    }
    snprintf(error, error_size,
             found_other_version ? "%s is installed in a version other than the one this build was made with"
                                 : "%s is not installed (looked for %s to %s)",
             library, names[0], name[-1]);
    return NULL;
}

const char *ipk_load_library(const char *const *names, int (*matches)(void *handle), const char *library,
                             const ipk_symbol *symbols, size_t count, char *error, size_t error_size) {
    void *handle = ipk_open_library(names, matches, library, error, error_size);
    if (!handle) return error;
    for (size_t i = 0; i < count; i++) {
        if (!(*symbols[i].slot = dlsym(handle, symbols[i].name))) {
            snprintf(error, error_size, "%s lacks %s", library, symbols[i].name);
            return error;
        }
    }
    return NULL;
}
