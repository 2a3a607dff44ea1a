/* What both loaders share besides ipk_open_library: the macros that turn one list of functions into a table of
   pointers, the list of names to look up for it, and the wrappers the header declares; and the function that
   opens a library and fills such a table.

   A loader lists its functions as LIST(X, V): X(return type, name, parameters, arguments) for a function that
   returns a value, V(name, parameters, arguments) for one that returns nothing. Before using the macros it
   defines IPK_TABLE, the name of its table of pointers. */
#ifndef IPK_ON_DEMAND_INTERNAL_H
#define IPK_ON_DEMAND_INTERNAL_H

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#define IPK_POINTER(ret, name, params, args) ret(*name) params;
#define IPK_VOID_POINTER(name, params, args) void(*name) params;

/* A function to look up, and where its address goes. */
typedef struct {
    const char *name;
    void **slot;
} ipk_symbol;

#define IPK_SYMBOL_X(ret, name, params, args) {#name, (void **)&IPK_TABLE.name},
#define IPK_SYMBOL_V(name, params, args) {#name, (void **)&IPK_TABLE.name},

/* Opens `library` as ipk_open_library does and looks up every one of `symbols`. Returns NULL, or a message in
   `error` (of `error_size` bytes): the library is missing, of another version, or lacks a function. */
const char *ipk_load_library(const char *const *names, int (*matches)(void *handle), const char *library,
                             const ipk_symbol *symbols, size_t count, char *error, size_t error_size);

/* Defines `const char *name(void)`: runs `load` (which returns NULL or a message) once per process and returns
   its answer every time. */
#define IPK_LOAD_ONCE(name, load)                                                                                 \
    static pthread_once_t name##_once = PTHREAD_ONCE_INIT;                                                        \
    static const char *name##_failure;                                                                            \
    static void name##_run(void) { name##_failure = load(); }                                                     \
    const char *name(void) {                                                                                      \
        pthread_once(&name##_once, name##_run);                                                                   \
        return name##_failure;                                                                                    \
    }

#define IPK_WRAPPER(ret, name, params, args) ret ipk_##name params { return IPK_TABLE.name args; }
#define IPK_VOID_WRAPPER(name, params, args) void ipk_##name params { IPK_TABLE.name args; }

#endif
