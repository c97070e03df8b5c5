#include "LibPQ.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct libpq_functions libpq_functions;

#if defined(__APPLE__)
static const char *const default_library = "libpq.5.dylib";
static const char *const install_hint = "install libpq (brew install libpq) and set CALLSTATS_LIBPQ to its libpq.5.dylib";
#else
static const char *const default_library = "libpq.so.5";
static const char *const install_hint = "install libpq5 (apt-get install libpq5), or set CALLSTATS_LIBPQ to its path";
#endif

#define SYMBOL(name) {#name, &libpq_functions.name}
static const struct {
    const char *name;
    void *slot;
} symbols[] = {
    SYMBOL(PQconnectdb),
    SYMBOL(PQfinish),
    SYMBOL(PQstatus),
    SYMBOL(PQserverVersion),
    SYMBOL(PQerrorMessage),
    SYMBOL(PQsetNoticeProcessor),
    SYMBOL(PQexec),
    SYMBOL(PQexecParams),
    SYMBOL(PQgetResult),
    SYMBOL(PQputCopyData),
    SYMBOL(PQputCopyEnd),
    SYMBOL(PQresultStatus),
    SYMBOL(PQresultErrorMessage),
    SYMBOL(PQresultErrorField),
    SYMBOL(PQntuples),
    SYMBOL(PQnfields),
    SYMBOL(PQfname),
    SYMBOL(PQftype),
    SYMBOL(PQcmdTuples),
    SYMBOL(PQgetvalue),
    SYMBOL(PQgetlength),
    SYMBOL(PQgetisnull),
    SYMBOL(PQclear),
};
#undef SYMBOL

// Every slot of the table has its symbol: a slot left out would stay NULL after a successful load.
_Static_assert(sizeof(symbols) / sizeof(symbols[0]) == sizeof(struct libpq_functions) / sizeof(void (*)(void)),
               "each function of struct libpq_functions needs its line in symbols[]");

static pthread_once_t once = PTHREAD_ONCE_INIT;
/// NULL once loaded; otherwise the message `libpq_load` returns. Written only inside `once`.
static const char *failure;
static char message[1024];

static void load(void) {
    const char *configured = getenv("CALLSTATS_LIBPQ");
    const char *library = configured && *configured ? configured : default_library;
    // RTLD_LOCAL: libpq's symbols stay out of the process's global namespace; everything
    // reaches them through the table. The handle is never closed: the table points into it.
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *reason = dlerror();
        snprintf(message, sizeof message, "libpq, the PostgreSQL client library, cannot be loaded (%s); %s",
                 reason ? reason : library, install_hint);
        failure = message;
        return;
    }
    for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
        void *address = dlsym(handle, symbols[i].name);
        if (!address) {
            snprintf(message, sizeof message, "%s is not a usable libpq: it lacks %s; %s", library, symbols[i].name,
                     install_hint);
            failure = message;
            memset(&libpq_functions, 0, sizeof libpq_functions);
            dlclose(handle);
            return;
        }
        // dlsym returns functions as void *; POSIX guarantees they convert to function pointers.
        memcpy(symbols[i].slot, &address, sizeof address);
    }
}

const char *libpq_load(void) {
    pthread_once(&once, load);
    return failure;
}
