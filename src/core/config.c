// SPDX-License-Identifier: Apache-2.0
// src/core/config.c: the config option parser and environment readers shared by the backends.
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_internal.h"
#include "core/runtime_internal.h"

//===--- small helpers ---===//

char* cml__runtime_strdup(cml_allocator_t allocator, const char* text) {
  if (!text) return NULL;
  size_t n = strlen(text) + 1;
  char* copy = (char*)cml_allocator_malloc(allocator, n, sizeof(void*));
  if (copy) memcpy(copy, text, n);
  return copy;
}

void cml__runtime_strfree(cml_allocator_t allocator, char* text) {
  if (text) cml_allocator_free(allocator, text, strlen(text) + 1);
}

bool cml__runtime_strieq(const char* a, const char* b) {
  if (!a || !b) return a == b;
  for (; *a && *b; ++a, ++b) {
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
  }
  return *a == *b;
}

// Trims ASCII whitespace at both ends of [*begin, *end).
static void cml__config_trim(const char** begin, const char** end) {
  while (*begin < *end && isspace((unsigned char)**begin)) ++*begin;
  while (*end > *begin && isspace((unsigned char)(*end)[-1])) --*end;
}

// Trims ASCII whitespace at both ends of the writable string |text| and returns its new start.
static char* cml__config_trim_in_place(char* text) {
  while (isspace((unsigned char)*text)) ++text;
  size_t n = strlen(text);
  while (n > 0 && isspace((unsigned char)text[n - 1])) text[--n] = '\0';
  return text;
}

//===--- value parsers ---===//

bool cml__parse_bool(const char* text, bool* out) {
  static const char* const kTrue[] = {"1", "true", "t", "yes", "on", "enabled"};
  static const char* const kFalse[] = {"0", "false", "f", "no", "off", "disabled"};
  if (!text) return false;
  for (size_t i = 0; i < sizeof kTrue / sizeof kTrue[0]; ++i) {
    if (cml__runtime_strieq(text, kTrue[i])) {
      if (out) *out = true;
      return true;
    }
  }
  for (size_t i = 0; i < sizeof kFalse / sizeof kFalse[0]; ++i) {
    if (cml__runtime_strieq(text, kFalse[i])) {
      if (out) *out = false;
      return true;
    }
  }
  return false;
}

// Parses a whole decimal (or 0x-prefixed hex) int64 with an optional sign.
static bool cml__config_parse_int(const char* text, int64_t* out) {
  const char* p = text;
  if (*p == '+' || *p == '-') ++p;
  if (!isdigit((unsigned char)*p)) return false;
  int base = (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) ? 16 : 10;
  errno = 0;
  char* end = NULL;
  long long v = strtoll(text, &end, base);
  if (errno != 0 || end == text || *end != '\0') return false;
  *out = (int64_t)v;
  return true;
}

static bool cml__config_parse_float(const char* text, double* out) {
  if (!*text || isspace((unsigned char)*text)) return false;
  errno = 0;
  char* end = NULL;
  double v = cml__strtod_c(text, &end);
  // ERANGE on underflow to a subnormal (5e-324) still gives that value: accepted; on overflow
  // (inf) or underflow to 0 (1e-400): refused.
  if ((errno == ERANGE && (v == 0 || !isfinite(v))) || end == text || *end != '\0' ||
      !isfinite(v)) {
    return false;
  }
  *out = v;
  return true;
}

static bool cml__config_is_list_separator(char c) {
  return c == ';' || c == ':' || isspace((unsigned char)c);
}

// Parses ints separated by ';', ':' or spaces. Returns false on a bad element or overflow of
// the list's capacity (|*out_too_many| tells which).
static bool cml__config_parse_int_list(const char* text, cml__int_list_t* out, bool* out_too_many) {
  cml__int_list_t list;
  list.count = 0;
  *out_too_many = false;
  const char* p = text;
  char element[32];
  while (*p) {
    while (*p && cml__config_is_list_separator(*p)) ++p;
    if (!*p) break;
    const char* start = p;
    while (*p && !cml__config_is_list_separator(*p)) ++p;
    size_t n = (size_t)(p - start);
    if (n >= sizeof element) return false;
    memcpy(element, start, n);
    element[n] = '\0';
    if (list.count == CML__INT_LIST_MAX) {
      *out_too_many = true;
      return false;
    }
    if (!cml__config_parse_int(element, &list.values[list.count])) return false;
    ++list.count;
  }
  *out = list;
  return true;
}

//===--- help and errors ---===//

static const char* cml__config_type_name(cml__option_type_t type) {
  switch (type) {
    case CML__OPT_BOOL:
      return "bool";
    case CML__OPT_INT:
      return "int";
    case CML__OPT_FLOAT:
      return "float";
    case CML__OPT_STRING:
      return "string";
    case CML__OPT_INT_LIST:
      return "int list";
    default:
      return "unknown";
  }
}

// What a value of |spec| should look like, for error messages.
static const char* cml__config_type_expectation(const cml__option_spec_t* spec) {
  switch (spec->type) {
    case CML__OPT_BOOL:
      return "a bool (1, true, t, yes, on, enabled / 0, false, f, no, off, disabled)";
    case CML__OPT_INT:
      return "an int";
    case CML__OPT_FLOAT:
      return "a finite float";
    case CML__OPT_STRING:
      return "a string";
    case CML__OPT_INT_LIST:
      return "a list of ints separated by ';', ':' or spaces";
    default:
      return "a value";
  }
}

// A tiny append-only text builder over a caller-provided buffer that counts what it needed.
typedef struct cml__config_text_t {
  char* buffer;
  size_t size;
  size_t length;  // needed length (may exceed size)
} cml__config_text_t;

static void cml__config_text_append(cml__config_text_t* t, const char* fmt, ...) CML_PRINTF(2, 3);
static void cml__config_text_append(cml__config_text_t* t, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  char* dst = NULL;
  size_t room = 0;
  if (t->buffer && t->length < t->size) {
    dst = t->buffer + t->length;
    room = t->size - t->length;
  }
  int n = cml__vsnprintf_c(dst, room, fmt, args);
  va_end(args);
  if (n > 0) t->length += (size_t)n;
}

size_t cml__config_format_help(const cml__option_spec_t* specs, size_t spec_count, char* buffer,
                               size_t size) {
  cml__config_text_t t = {buffer, size, 0};
  if (buffer && size > 0) buffer[0] = '\0';
  for (size_t i = 0; i < spec_count; ++i) {
    const cml__option_spec_t* s = &specs[i];
    if (!s->key) continue;
    cml__config_text_append(&t, "  %s=<%s>", s->key, cml__config_type_name(s->type));
    if (s->type == CML__OPT_STRING && s->choices) {
      cml__config_text_append(&t, " (one of %s)", s->choices);
    }
    if (s->check_range && (s->type == CML__OPT_INT || s->type == CML__OPT_FLOAT)) {
      cml__config_text_append(&t, " [%g..%g]", s->min, s->max);
    }
    if (s->alias) cml__config_text_append(&t, " (alias %s)", s->alias);
    if (s->type == CML__OPT_BOOL) cml__config_text_append(&t, " (also %s / no%s)", s->key, s->key);
    if (s->help) cml__config_text_append(&t, ": %s", s->help);
    cml__config_text_append(&t, "\n");
  }
  return t.length;
}

cml_status_t cml_config_unknown_key(const char* backend, const char* key,
                                    const cml_option_spec_t* specs, size_t spec_count) {
  // Two passes: measure, then fill.
  cml__config_text_t t = {NULL, 0, 0};
  char* list = NULL;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      list = (char*)malloc(t.length + 1);
      if (!list) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      t.buffer = list;
      t.size = t.length + 1;
      t.length = 0;
      list[0] = '\0';
    }
    size_t listed = 0;
    for (size_t i = 0; i < spec_count; ++i) {
      if (!specs[i].key) continue;
      cml__config_text_append(&t, "%s%s", listed++ ? ", " : "", specs[i].key);
      if (specs[i].alias) cml__config_text_append(&t, " (or %s)", specs[i].alias);
    }
    cml__config_text_append(&t, "%shelp", listed ? ", " : "");
  }
  cml_status_t st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                    "%s backend: unknown option \"%s\"; valid options: %s",
                                    backend ? backend : "?", key ? key : "", list);
  free(list);
  return st;
}

static cml_status_t cml__config_help_status(const char* backend, const cml__option_spec_t* specs,
                                            size_t spec_count) {
  size_t n = cml__config_format_help(specs, spec_count, NULL, 0);
  char* text = (char*)malloc(n + 1);
  if (!text) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  cml__config_format_help(specs, spec_count, text, n + 1);
  cml_status_t st = cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s backend options:\n%s",
                                    backend ? backend : "?", spec_count ? text : "  (none)\n");
  free(text);
  return st;
}

static cml_status_t cml__config_bad_value(const char* backend, const cml__option_spec_t* spec,
                                          const char* value, const char* detail) {
  return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                         "%s backend: invalid value \"%s\" for option \"%s\": expected %s%s",
                         backend ? backend : "?", value, spec->key,
                         cml__config_type_expectation(spec), detail ? detail : "");
}

//===--- the parser ---===//

static const cml__option_spec_t* cml__config_find(const cml__option_spec_t* specs,
                                                  size_t spec_count, const char* key) {
  for (size_t i = 0; i < spec_count; ++i) {
    if (!specs[i].key) continue;
    if (strcmp(specs[i].key, key) == 0) return &specs[i];
    if (specs[i].alias && strcmp(specs[i].alias, key) == 0) return &specs[i];
  }
  return NULL;
}

static bool cml__config_in_choices(const char* choices, const char* value, const char** out_match) {
  const char* p = choices;
  size_t vlen = strlen(value);
  while (*p) {
    const char* end = strchr(p, '|');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == vlen) {
      size_t k = 0;
      while (k < n && tolower((unsigned char)p[k]) == tolower((unsigned char)value[k])) ++k;
      if (k == n) {
        *out_match = p;
        return true;
      }
    }
    if (!end) break;
    p = end + 1;
  }
  return false;
}

// Stores |value| (non-NULL) into |spec|'s output.
static cml_status_t cml__config_store(const char* backend, const cml__option_spec_t* spec,
                                      const char* value) {
  char detail[160];
  switch (spec->type) {
    case CML__OPT_BOOL: {
      bool v = false;
      if (!cml__parse_bool(value, &v)) return cml__config_bad_value(backend, spec, value, NULL);
      if (spec->out) *(bool*)spec->out = v;
      break;
    }
    case CML__OPT_INT: {
      int64_t v = 0;
      if (!cml__config_parse_int(value, &v)) {
        return cml__config_bad_value(backend, spec, value, NULL);
      }
      if (spec->check_range && ((double)v < spec->min || (double)v > spec->max)) {
        cml__snprintf_c(detail, sizeof detail, " in [%.17g, %.17g]", spec->min, spec->max);
        return cml__config_bad_value(backend, spec, value, detail);
      }
      if (spec->out) *(int64_t*)spec->out = v;
      break;
    }
    case CML__OPT_FLOAT: {
      double v = 0;
      if (!cml__config_parse_float(value, &v)) {
        return cml__config_bad_value(backend, spec, value, NULL);
      }
      if (spec->check_range && (v < spec->min || v > spec->max)) {
        cml__snprintf_c(detail, sizeof detail, " in [%.17g, %.17g]", spec->min, spec->max);
        return cml__config_bad_value(backend, spec, value, detail);
      }
      if (spec->out) *(double*)spec->out = v;
      break;
    }
    case CML__OPT_STRING: {
      const char* stored = value;
      size_t n = strlen(value);
      if (spec->choices) {
        const char* match = NULL;
        if (!cml__config_in_choices(spec->choices, value, &match)) {
          snprintf(detail, sizeof detail, ", one of %s", spec->choices);
          return cml__config_bad_value(backend, spec, value, detail);
        }
        stored = match;  // the canonical spelling
      }
      if (spec->out) {
        if (n + 1 > spec->capacity) {
          snprintf(detail, sizeof detail, " of at most %zu characters",
                   spec->capacity ? spec->capacity - 1 : 0);
          return cml__config_bad_value(backend, spec, value, detail);
        }
        memcpy(spec->out, stored, n);
        ((char*)spec->out)[n] = '\0';
      }
      break;
    }
    case CML__OPT_INT_LIST: {
      cml__int_list_t list;
      bool too_many = false;
      if (!cml__config_parse_int_list(value, &list, &too_many)) {
        if (too_many) {
          snprintf(detail, sizeof detail, " (at most %d entries)", CML__INT_LIST_MAX);
          return cml__config_bad_value(backend, spec, value, detail);
        }
        return cml__config_bad_value(backend, spec, value, NULL);
      }
      if (spec->out) *(cml__int_list_t*)spec->out = list;
      break;
    }
    default:
      return cml_status_make(CML_STATUS_INTERNAL, "%s backend: option \"%s\" has a bad type %d",
                             backend ? backend : "?", spec->key, (int)spec->type);
  }
  if (spec->out_set) *spec->out_set = true;
  return CML_OK;
}

// INVALID_ARGUMENT when |spec| was already given (|seen| has one flag per spec: an option, its
// alias and its "no" form are one spec); otherwise marks it given. |key| and |value| (may be NULL)
// are this item's.
static cml_status_t cml__config_mark_seen(const char* backend, const cml__option_spec_t* specs,
                                          const cml__option_spec_t* spec, bool* seen,
                                          const char* key, const char* value) {
  size_t i = (size_t)(spec - specs);
  if (!seen[i]) {
    seen[i] = true;
    return CML_OK;
  }
  char spelled[160] = "";
  if (spec->alias) {
    snprintf(spelled, sizeof spelled, " (\"%s\" and \"%s\" are the same option)", spec->key,
             spec->alias);
  }
  return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                         "%s backend: option \"%s\" is given more than once (again as "
                         "\"%s%s%s\")%s; give each option once",
                         backend ? backend : "?", spec->key, key, value ? "=" : "",
                         value ? value : "", spelled);
}

// Parses one trimmed, non-empty item held in |item| (writable, NUL-terminated). |seen| tracks
// the specs already given (see cml__config_mark_seen).
static cml_status_t cml__config_parse_item(const char* backend, char* item, size_t index,
                                           const cml__option_spec_t* specs, size_t spec_count,
                                           bool* seen, cml__config_extra_fn extra, void* user) {
  char* eq = strchr(item, '=');
  const char* key = item;
  const char* value = NULL;
  char* whole = NULL;
  if (eq) {
    // Keep an untouched copy of the item for |extra| before splitting it.
    size_t n = strlen(item) + 1;
    whole = (char*)malloc(n);
    if (!whole) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    memcpy(whole, item, n);
    *eq = '\0';
    key = cml__config_trim_in_place(item);
    value = cml__config_trim_in_place(eq + 1);
  }

  cml_status_t st = CML_OK;
  const cml__option_spec_t* spec = cml__config_find(specs, spec_count, key);
  if (spec) {
    st = cml__config_mark_seen(backend, specs, spec, seen, key, value);
    if (st == CML_OK && value) {
      st = cml__config_store(backend, spec, value);
    } else if (st == CML_OK && spec->type == CML__OPT_BOOL) {
      st = cml__config_store(backend, spec, "true");
    } else if (st == CML_OK) {
      st = cml_status_make(
          CML_STATUS_INVALID_ARGUMENT, "%s backend: option \"%s\" needs a value: %s=<%s>",
          backend ? backend : "?", spec->key, spec->key, cml__config_type_name(spec->type));
    }
  } else if (!value && strcmp(key, "help") == 0) {
    st = cml__config_help_status(backend, specs, spec_count);
  } else {
    const cml__option_spec_t* negated = NULL;
    if (!value && strncmp(key, "no", 2) == 0) {
      negated = cml__config_find(specs, spec_count, key + 2);
      if (negated && negated->type != CML__OPT_BOOL) negated = NULL;
    }
    if (negated) {
      st = cml__config_mark_seen(backend, specs, negated, seen, key, NULL);
      if (st == CML_OK) st = cml__config_store(backend, negated, "false");
    } else if (extra) {
      st = extra(user, index, whole ? whole : item);
    } else {
      st = cml__config_unknown_key(backend, key, specs, spec_count);
    }
  }
  free(whole);
  return st;
}

cml_status_t cml_config_parse(const char* backend, const char* config,
                              const cml_option_spec_t* specs, size_t spec_count,
                              cml_config_extra_fn extra, void* user) {
  if (!config || !*config) return CML_OK;
  if (!specs && spec_count) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s backend: NULL option specs",
                           backend ? backend : "?");
  }
  size_t len = strlen(config);
  char* item = (char*)malloc(len + 1);
  bool* seen = (bool*)calloc(spec_count ? spec_count : 1, sizeof *seen);
  if (!item || !seen) {
    free(item);
    free(seen);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  size_t index = 0;
  cml_status_t st = CML_OK;
  const char* p = config;
  while (st == CML_OK) {
    const char* comma = strchr(p, ',');
    const char* b = p;
    const char* e = comma ? comma : p + strlen(p);
    cml__config_trim(&b, &e);
    if (e > b) {
      memcpy(item, b, (size_t)(e - b));
      item[e - b] = '\0';
      st = cml__config_parse_item(backend, item, index, specs, spec_count, seen, extra, user);
      ++index;
    }
    if (!comma) break;
    p = comma + 1;
  }
  free(item);
  free(seen);
  return st;
}

//===--- environment ---===//

cml_status_t cml__env_bool(const char* name, bool default_value, bool* out) {
  if (!name || !out) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "cml__env_bool: NULL argument");
  }
  const char* v = getenv(name);
  if (!v || !*v) {
    *out = default_value;
    return CML_OK;
  }
  if (!cml__parse_bool(v, out)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "environment variable %s=\"%s\" is not a bool: use 1, true, t, yes, "
                           "on, enabled or 0, false, f, no, off, disabled",
                           name, v);
  }
  return CML_OK;
}

cml_status_t cml__env_int(const char* name, int64_t default_value, int64_t* out) {
  if (!name || !out) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "cml__env_int: NULL argument");
  }
  const char* v = getenv(name);
  if (!v || !*v) {
    *out = default_value;
    return CML_OK;
  }
  if (!cml__config_parse_int(v, out)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "environment variable %s=\"%s\" is not an int", name, v);
  }
  return CML_OK;
}

//===--- config strings ---===//

cml_status_t cml__config_split(const char* config, char* name, size_t name_size,
                               const char** out_rest) {
  if (out_rest) *out_rest = "";
  if (!name || name_size == 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "backend config: no room for the name");
  }
  name[0] = '\0';
  if (!config) return CML_OK;
  const char* colon = strchr(config, ':');
  const char* b = config;
  const char* e = colon ? colon : config + strlen(config);
  cml__config_trim(&b, &e);
  size_t n = (size_t)(e - b);
  if (n + 1 > name_size) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "backend config \"%s\": the backend name is too long (%zu characters, "
                           "at most %zu)",
                           config, n, name_size - 1);
  }
  memcpy(name, b, n);
  name[n] = '\0';
  if (out_rest) *out_rest = colon ? colon + 1 : "";
  return CML_OK;
}
