// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/install/sha256.c: SHA-256 (FIPS 180-4) for checking downloaded wheels.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/install/install.h"

typedef struct cml_xla_sha256_t {
  uint32_t state[8];
  uint64_t length;  // bytes hashed so far
  uint8_t block[64];
  size_t used;
} cml_xla_sha256_t;

static const uint32_t cml_xla_sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t cml_xla_rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void cml_xla_sha256_block(cml_xla_sha256_t* h, const uint8_t* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = ((uint32_t)p[4 * i] << 24) | ((uint32_t)p[4 * i + 1] << 16) |
           ((uint32_t)p[4 * i + 2] << 8) | (uint32_t)p[4 * i + 3];
  }
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = cml_xla_rotr(w[i - 15], 7) ^ cml_xla_rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = cml_xla_rotr(w[i - 2], 17) ^ cml_xla_rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h->state[0], b = h->state[1], c = h->state[2], d = h->state[3];
  uint32_t e = h->state[4], f = h->state[5], g = h->state[6], hh = h->state[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t s1 = cml_xla_rotr(e, 6) ^ cml_xla_rotr(e, 11) ^ cml_xla_rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = hh + s1 + ch + cml_xla_sha256_k[i] + w[i];
    uint32_t s0 = cml_xla_rotr(a, 2) ^ cml_xla_rotr(a, 13) ^ cml_xla_rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = s0 + maj;
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h->state[0] += a;
  h->state[1] += b;
  h->state[2] += c;
  h->state[3] += d;
  h->state[4] += e;
  h->state[5] += f;
  h->state[6] += g;
  h->state[7] += hh;
}

static void cml_xla_sha256_init(cml_xla_sha256_t* h) {
  static const uint32_t kInit[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(h->state, kInit, sizeof kInit);
  h->length = 0;
  h->used = 0;
}

static void cml_xla_sha256_update(cml_xla_sha256_t* h, const uint8_t* data, size_t size) {
  h->length += size;
  while (size > 0) {
    if (h->used == 0 && size >= 64) {
      cml_xla_sha256_block(h, data);
      data += 64;
      size -= 64;
      continue;
    }
    size_t take = 64 - h->used < size ? 64 - h->used : size;
    memcpy(h->block + h->used, data, take);
    h->used += take;
    data += take;
    size -= take;
    if (h->used == 64) {
      cml_xla_sha256_block(h, h->block);
      h->used = 0;
    }
  }
}

static void cml_xla_sha256_final(cml_xla_sha256_t* h, uint8_t out[32]) {
  uint64_t bits = h->length * 8;
  uint8_t pad = 0x80;
  uint64_t length = h->length;
  cml_xla_sha256_update(h, &pad, 1);
  uint8_t zero = 0;
  while (h->used != 56) cml_xla_sha256_update(h, &zero, 1);
  uint8_t len_be[8];
  for (int i = 0; i < 8; ++i) len_be[i] = (uint8_t)(bits >> (56 - 8 * i));
  cml_xla_sha256_update(h, len_be, 8);
  h->length = length;
  for (int i = 0; i < 8; ++i) {
    out[4 * i] = (uint8_t)(h->state[i] >> 24);
    out[4 * i + 1] = (uint8_t)(h->state[i] >> 16);
    out[4 * i + 2] = (uint8_t)(h->state[i] >> 8);
    out[4 * i + 3] = (uint8_t)h->state[i];
  }
}

void cml__xla_sha256(const void* data, size_t size, uint8_t out[32]) {
  cml_xla_sha256_t h;
  cml_xla_sha256_init(&h);
  cml_xla_sha256_update(&h, data, size);
  cml_xla_sha256_final(&h, out);
}

cml_status_t cml__xla_sha256_file(const char* path, char hex[65], uint64_t* out_size) {
  hex[0] = '\0';
  *out_size = 0;
  FILE* f = fopen(path, "rb");
  if (!f) {
    return cml_status_make(errno == ENOENT ? CML_STATUS_NOT_FOUND : CML_STATUS_UNAVAILABLE,
                           "xla: cannot read \"%s\": %s", path, strerror(errno));
  }
  enum { kChunk = 1 << 20 };
  uint8_t* buf = malloc(kChunk);
  if (!buf) {
    fclose(f);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  cml_xla_sha256_t h;
  cml_xla_sha256_init(&h);
  size_t got;
  uint64_t total = 0;
  while ((got = fread(buf, 1, kChunk, f)) > 0) {
    cml_xla_sha256_update(&h, buf, got);
    total += got;
  }
  bool failed = ferror(f) != 0;
  fclose(f);
  free(buf);
  if (failed) return cml_status_make(CML_STATUS_UNAVAILABLE, "xla: error reading \"%s\"", path);
  uint8_t digest[32];
  cml_xla_sha256_final(&h, digest);
  for (int i = 0; i < 32; ++i) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
  *out_size = total;
  return CML_OK;
}
