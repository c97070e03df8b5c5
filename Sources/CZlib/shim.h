// zlib: gzip logs (the collector's compression where the platform has no zstd), gzip-compressed
// dumps (Chrome and rtcstats-server write them) and gzip request bodies of `callstats serve`.
#include <zlib.h>

// inflateInit2 and deflateInit2 are macros in zlib.h, which Swift cannot call.
static inline int czlib_inflate_init2(z_stream *stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}

static inline int czlib_deflate_init2(z_stream *stream, int level, int windowBits) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}
