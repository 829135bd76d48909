// SPDX-License-Identifier: Apache-2.0
// tools/cml/machine.h: what the benchmarks print about the machine they ran on; used by
// `cml bench` and the side-by-side programs in bench/.
#ifndef CML_TOOLS_MACHINE_H_
#define CML_TOOLS_MACHINE_H_

#include <stddef.h>

// The CPU model as /proc/cpuinfo names it, with its family and model numbers where it gives
// them ("AMD EPYC (family 25 model 17)"), or "unknown CPU". Always NUL-terminated in |size|.
void cml_cli_cpu_model(char* out, size_t size);

#endif  // CML_TOOLS_MACHINE_H_
