#ifndef CALLSTATS_BYTE_COMPARE_H
#define CALLSTATS_BYTE_COMPARE_H

// Byte comparisons and scans for the scanner's hot loops, in C for the SSE2 intrinsics: with
// Swift's SIMD types the same 32-byte comparison cost 3.5 % more instructions on the
// real-shaped corpus than the 8-byte words it replaced, where this one saves 0.7 %
// (DECISIONS.md).
// Static inline, so the Swift compiler inlines them into their callers; ptrdiff_t is Swift's
// Int on every platform.

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/// How many leading bytes of `a` and `b` are equal, up to `n` (both must hold `n` bytes).
static inline ptrdiff_t byte_compare_common_prefix(const uint8_t *a, const uint8_t *b, ptrdiff_t n) {
    ptrdiff_t i = 0;
#if defined(__SSE2__)
    // Thirty-two bytes a step while equal (most of a changed object is not).
    while (i + 32 <= n) {
        __m128i low = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + i)), _mm_loadu_si128((const __m128i *)(b + i)));
        __m128i high = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + i + 16)),
                                      _mm_loadu_si128((const __m128i *)(b + i + 16)));
        unsigned equal = (unsigned)_mm_movemask_epi8(low) | ((unsigned)_mm_movemask_epi8(high) << 16);
        if (equal != 0xFFFFFFFFu) return i + __builtin_ctz(~equal);
        i += 32;
    }
#endif
    while (i + 8 <= n) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        // The first differing byte is the lowest set byte of x ^ y on a little-endian machine.
        if (x != y) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return i + __builtin_ctzll(x ^ y) / 8;
#else
            break;
#endif
        }
        i += 8;
    }
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/// Where the first quote, backslash or control byte lies among the `n` bytes at `p` (`n` when
/// none does): the end of a JSON string's plain run, sixteen bytes a step.
static inline ptrdiff_t byte_string_run(const uint8_t *p, ptrdiff_t n) {
    ptrdiff_t i = 0;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8(0x22), backslash = _mm_set1_epi8(0x5C), lastControl = _mm_set1_epi8(0x1F);
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        // Unsigned v <= 0x1F exactly when min(v, 0x1F) == v.
        __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                       _mm_cmpeq_epi8(_mm_min_epu8(v, lastControl), v));
        unsigned mask = (unsigned)_mm_movemask_epi8(special);
        if (mask != 0) return i + __builtin_ctz(mask);
        i += 16;
    }
#endif
    while (i < n && p[i] != 0x22 && p[i] != 0x5C && p[i] >= 0x20) i++;
    return i;
}

#endif
