// SPDX-License-Identifier: Apache-2.0
// tools/cml/machine.c: see machine.h.
#include "tools/cml/machine.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void cml_cli_cpu_model(char* out, size_t size) {
  if (size == 0) return;
  snprintf(out, size, "unknown CPU");
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512], family[32] = "", model[32] = "";
  bool named = false;
  // The first processor's lines only: they end at the first blank line.
  while (fgets(line, sizeof line, f) && line[0] != '\n') {
    char* colon = strchr(line, ':');
    if (!colon) continue;
    char* value = colon + 1;
    while (*value == ' ') ++value;
    value[strcspn(value, "\n")] = '\0';
    if (!named && strncmp(line, "model name", 10) == 0) {
      snprintf(out, size, "%s", value);
      named = true;
    } else if (!family[0] && strncmp(line, "cpu family", 10) == 0) {
      snprintf(family, sizeof family, "%s", value);
    } else if (!model[0] && strncmp(line, "model\t", 6) == 0) {
      snprintf(model, sizeof model, "%s", value);
    }
  }
  fclose(f);
  if (named && family[0] && model[0]) {
    size_t used = strlen(out);
    if (used < size) snprintf(out + used, size - used, " (family %s model %s)", family, model);
  }
}
