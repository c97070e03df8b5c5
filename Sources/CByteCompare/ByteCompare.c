// The functions are static inline in include/ByteCompare.h; a C target needs a source file.
#include "ByteCompare.h"
