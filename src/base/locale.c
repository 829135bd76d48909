// SPDX-License-Identifier: Apache-2.0
// src/base/locale.c: numbers written and read in the "C" locale, whatever locale the process
// has set. A program that calls setlocale(LC_ALL, "") in a locale with a comma decimal
// separator (de_DE, fr_FR, ...) must still get "1.5" in StableHLO text and config strings.
#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/base_internal.h"

static locale_t cml_c_locale;  // (locale_t)0 when newlocale failed: the calling thread's locale
static pthread_once_t cml_c_locale_once = PTHREAD_ONCE_INIT;

static void cml_c_locale_init(void) { cml_c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }

// Switches the calling thread to the C locale; returns the locale to restore, or (locale_t)0
// when there is nothing to restore.
static locale_t cml_c_locale_enter(void) {
  pthread_once(&cml_c_locale_once, cml_c_locale_init);
  return cml_c_locale ? uselocale(cml_c_locale) : (locale_t)0;
}

static void cml_c_locale_leave(locale_t previous) {
  if (previous) uselocale(previous);
}

int cml__snprintf_c(char* buffer, size_t size, const char* fmt, ...) {
  locale_t previous = cml_c_locale_enter();
  va_list args;
  va_start(args, fmt);
  int n = vsnprintf(buffer, size, fmt, args);
  va_end(args);
  cml_c_locale_leave(previous);
  return n;
}

int cml__vsnprintf_c(char* buffer, size_t size, const char* fmt, va_list args) {
  locale_t previous = cml_c_locale_enter();
  int n = vsnprintf(buffer, size, fmt, args);
  cml_c_locale_leave(previous);
  return n;
}

double cml__strtod_c(const char* text, char** end) {
  locale_t previous = cml_c_locale_enter();
  double v = strtod(text, end);
  int saved_errno = errno;
  cml_c_locale_leave(previous);
  errno = saved_errno;
  return v;
}
