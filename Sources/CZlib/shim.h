// zlib's inflate: gzip-compressed dumps (Chrome and rtcstats-server write them) and gzip
// request bodies of `callstats serve`.
#include <zlib.h>

// inflateInit2 is a macro in zlib.h, which Swift cannot call.
static inline int czlib_inflate_init2(z_stream *stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}
