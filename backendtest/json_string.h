// SPDX-License-Identifier: Apache-2.0
// backendtest/json_string.h: writes a C string as a JSON string, for the compliance suite's
// and `cml bench`'s --json files (header-only: both the suite's library and the tool use it).
//
// Quotes, backslashes and control characters are escaped; well-formed UTF-8 passes through;
// any byte that does not start a well-formed sequence (a stray continuation byte, an overlong
// form, a surrogate, a code point past U+10FFFF, a sequence cut short) is written as U+FFFD,
// so a filter or a backend name in another encoding still gives a valid JSON file.
#ifndef CML_BACKENDTEST_JSON_STRING_H_
#define CML_BACKENDTEST_JSON_STRING_H_

#include <stddef.h>
#include <stdio.h>

// Length of the well-formed UTF-8 sequence at |p| (1-4), 0 when it is not one.
static inline size_t cml__utf8_length(const unsigned char* p) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t n;
  unsigned lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;  // overlong
    if (c == 0xf4) hi = 0x8f;  // past U+10FFFF
  } else {
    return 0;
  }
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (p[i] < 0x80 || p[i] > 0xbf) return 0;  // also stops at the terminating NUL
  }
  return n;
}

static inline void cml__json_write_string(FILE* out, const char* s) {
  if (!s) {
    fputs("null", out);
    return;
  }
  fputc('"', out);
  for (const unsigned char* p = (const unsigned char*)s; *p;) {
    const unsigned char c = *p;
    if (c == '"' || c == '\\') {
      fputc('\\', out);
      fputc(c, out);
    } else if (c == '\n') {
      fputs("\\n", out);
    } else if (c == '\r') {
      fputs("\\r", out);
    } else if (c == '\t') {
      fputs("\\t", out);
    } else if (c < 0x20 || c == 0x7f) {
      fprintf(out, "\\u%04x", c);
    } else {
      const size_t n = cml__utf8_length(p);
      if (n == 0) {
        fputs("\\ufffd", out);
        ++p;
        continue;
      }
      fwrite(p, 1, n, out);
      p += n;
      continue;
    }
    ++p;
  }
  fputc('"', out);
}

#endif  // CML_BACKENDTEST_JSON_STRING_H_
