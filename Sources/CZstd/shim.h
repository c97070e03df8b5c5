// The buffer-less decompression API (ZSTD_decompressContinue, ZSTD_getFrameHeader) is in
// zstd.h's static-linking section; libzstd exports it from the shared library too.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>
