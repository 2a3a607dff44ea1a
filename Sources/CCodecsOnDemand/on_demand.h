/* What both loaders share besides ipk_open_library: the macros that turn one list of functions into a table of
   pointers, their lookups and the wrappers the header declares.

   A loader lists its functions as LIST(X, V): X(return type, name, parameters, arguments) for a function that
   returns a value, V(name, parameters, arguments) for one that returns nothing. Before using the macros it
   defines IPK_TABLE (the name of its table of pointers) and IPK_LIBRARY (the library's name, for messages). */
#ifndef IPK_ON_DEMAND_INTERNAL_H
#define IPK_ON_DEMAND_INTERNAL_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define IPK_POINTER(ret, name, params, args) ret(*name) params;
#define IPK_VOID_POINTER(name, params, args) void(*name) params;

/* Inside a function returning `const char *`: looks `name` up in `handle`, or returns a message into `error`. */
#define IPK_LOOKUP(name)                                                                                          \
    if (!(*(void **)&IPK_TABLE.name = dlsym(handle, #name))) {                                                   \
        snprintf(error, sizeof error, "%s lacks %s", IPK_LIBRARY, #name);                                        \
        return error;                                                                                             \
    }
#define IPK_LOOKUP_X(ret, name, params, args) IPK_LOOKUP(name)
#define IPK_LOOKUP_V(name, params, args) IPK_LOOKUP(name)

/* Defines `const char *name(void)`: runs `open_and_look_up` (which returns NULL or a message) once per process
   and returns its answer every time. */
#define IPK_LOAD_ONCE(name, open_and_look_up)                                                                     \
    static pthread_once_t name##_once = PTHREAD_ONCE_INIT;                                                        \
    static const char *name##_failure;                                                                            \
    static void name##_run(void) { name##_failure = open_and_look_up(); }                                        \
    const char *name(void) {                                                                                      \
        pthread_once(&name##_once, name##_run);                                                                   \
        return name##_failure;                                                                                    \
    }

#define IPK_WRAPPER(ret, name, params, args) ret ipk_##name params { return IPK_TABLE.name args; }
#define IPK_VOID_WRAPPER(name, params, args) void ipk_##name params { IPK_TABLE.name args; }

#endif
