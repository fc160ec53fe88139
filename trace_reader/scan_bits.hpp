// The scanner's vector steps (kineto_reader.cpp): the end of a string's plain run, the next string or bracket inside
// an event, and for a 64-byte block the bits of one byte value, their prefix XOR (the bytes inside strings, from the
// quotes) and the characters a backslash escapes. AVX2 where the build allows it (OB_TRACE_READER_AVX2), else SSE2.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace ob::trace::scan {

// The first '"' or '\\' in b[i, end), or end: the end of a string's plain run.
inline size_t find_quote(const char* b, size_t i, size_t end) {
#ifdef __AVX2__
  const __m256i quote = _mm256_set1_epi8('"'), backslash = _mm256_set1_epi8('\\');
  while (i + 32 <= end) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
    unsigned mask = static_cast<unsigned>(
        _mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash))));
    if (mask) return i + static_cast<size_t>(__builtin_ctz(mask));
    i += 32;
  }
#endif
  const __m128i quote16 = _mm_set1_epi8('"'), backslash16 = _mm_set1_epi8('\\');
  while (i + 16 <= end) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote16), _mm_cmpeq_epi8(v, backslash16)));
    if (mask) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    i += 16;
  }
  while (i < end && b[i] != '"' && b[i] != '\\') ++i;
  return i;
}

// The first '"' or bracket in b[i, end), or end: inside an event nothing else matters to the cutting.
inline size_t find_structure(const char* b, size_t i, size_t end) {
  // '[' 0x5B and '{' 0x7B differ in bit 0x20, as ']' 0x5D and '}' 0x7D do.
  const __m128i quote = _mm_set1_epi8('"'), open = _mm_set1_epi8(0x5B), close = _mm_set1_epi8(0x5D),
                fold = _mm_set1_epi8(static_cast<char>(0xDF));
  while (i + 16 <= end) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    __m128i folded = _mm_and_si128(v, fold);
    __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, quote),
                               _mm_or_si128(_mm_cmpeq_epi8(folded, open), _mm_cmpeq_epi8(folded, close)));
    int mask = _mm_movemask_epi8(hit);
    if (mask) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    i += 16;
  }
  while (i < end && b[i] != '"' && (b[i] & 0xDF) != 0x5B && (b[i] & 0xDF) != 0x5D) ++i;
  return i;
}

// Bits of a 64-byte block equal to `c`.
inline uint64_t equal_bits(const char* b, char c) {
#ifdef __AVX2__
  const __m256i v = _mm256_set1_epi8(c);
  uint32_t lo = static_cast<uint32_t>(
      _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), v)));
  uint32_t hi = static_cast<uint32_t>(
      _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32)), v)));
  return uint64_t{lo} | (uint64_t{hi} << 32);
#else
  const __m128i v = _mm_set1_epi8(c);
  uint64_t bits = 0;
  for (int k = 0; k < 4; ++k) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * k));
    bits |= uint64_t{static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, v)))} << (16 * k);
  }
  return bits;
#endif
}

inline uint64_t prefix_xor(uint64_t x) {
  for (int shift = 1; shift < 64; shift <<= 1) x ^= x << shift;
  return x;
}

// The escaped characters of a block (simdjson's branchless rule: a run of backslashes escapes the character after
// it when the run is odd), `carry` whether the block's first character is escaped, updated for the next block.
inline uint64_t escaped_bits(uint64_t backslash, uint64_t& carry) {
  backslash &= ~carry;
  uint64_t follows = backslash << 1 | carry;
  const uint64_t even = 0x5555555555555555ULL;
  uint64_t odd_starts = backslash & ~even & ~follows;
  unsigned long long even_starts = 0;
  carry = __builtin_uaddll_overflow(odd_starts, backslash, &even_starts) ? 1 : 0;
  return (even ^ (even_starts << 1)) & follows;
}

}  // namespace ob::trace::scan
