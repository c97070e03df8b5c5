// zlib's inflate, for gzip-compressed dumps (Chrome and rtcstats-server write them).
#include <zlib.h>
