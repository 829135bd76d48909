// SPDX-License-Identifier: Apache-2.0
// tests/unit/distributed_api_test.c: meshes, replica groups, sharding specs, the SPMD and
// AutoSharding builders, collective op shape rules and validation, module fields, executable
// accessors and the device-major input checks (cml/distributed.h), on a fake multi-device
// backend.
#include <stdint.h>

#include "builder_fake_backend.h"
#include "cml/cml.h"
#include "cml/distributed.h"
#include "core/builder_internal.h"
#include "test.h"

#define SHAPE(dt, ...)                                                                \
  cml_shape_make((dt), (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                 (int64_t[]){__VA_ARGS__})

// A pointer to a shape made in place.
#define SHAPE_PTR(dt, ...) (&(cml_shape_t[]){SHAPE(dt, __VA_ARGS__)}[0])

// A fake backend with |devices| devices and the distribution strategies in |bits| (besides
// NONE, which the core sets).
static fake_backend_t* multi_backend(int devices, uint32_t bits) {
  fake_backend_t* fb = fake_backend_new();
  if (!fb) return NULL;
  fb->base.device_count = devices;
  fb->base.capabilities.distributions |= bits;
  return fb;
}
#define SPMD_BIT (1u << CML_DISTRIBUTION_SPMD)
#define AUTO_BIT (1u << CML_DISTRIBUTION_AUTO_SHARDING)

// True when |st| has |code| and its message contains every needle (prints it otherwise); frees
// |st|.
static bool status_matches(cml_status_t st, cml_status_code_t code, const char* const* needles) {
  bool ok = cml_status_code(st) == code;
  for (const char* const* n = needles; ok && *n; ++n) {
    ok = strstr(cml_status_message(st), *n) != NULL;
  }
  if (!ok) {
    fprintf(stderr, "status: want %s, got %s: \"%s\"\n", cml_status_code_name(code),
            cml_status_code_name(cml_status_code(st)), cml_status_message(st));
  }
  cml_status_free(st);
  return ok;
}
#define ASSERT_STATUS(expr, code, ...) \
  ASSERT_TRUE(status_matches((expr), (code), (const char* const[]){__VA_ARGS__, NULL}))
#define ASSERT_BUILDER_ERROR(b, code, ...) \
  ASSERT_TRUE(                             \
      status_matches(cml_builder_status(b), (code), (const char* const[]){__VA_ARGS__, NULL}))

static cml_mesh_t* mesh2(const char* name, const char* a0, int64_t s0, const char* a1, int64_t s1) {
  const char* names[2] = {a0, a1};
  int64_t sizes[2] = {s0, s1};
  cml_mesh_t* m = NULL;
  cml_status_t st = cml_mesh_create(name, names, sizes, a1 ? 2 : 1, &m);
  if (st != CML_OK) {
    fprintf(stderr, "mesh: %s\n", cml_status_message(st));
    cml_status_free(st);
  }
  return m;
}

//===--- meshes ---===//

TEST(mesh_create_and_accessors) {
  cml_mesh_t* m = mesh2(NULL, "batch", 2, "data", 3);
  ASSERT_TRUE(m != NULL);
  ASSERT_STREQ(cml_mesh_name(m), "mesh");
  ASSERT_EQ_INT(cml_mesh_axis_count(m), 2);
  ASSERT_STREQ(cml_mesh_axis_name(m, 1), "data");
  ASSERT_EQ_INT(cml_mesh_axis_size(m, 0), 2);
  ASSERT_EQ_INT(cml_mesh_axis_size(m, 2), -1);
  ASSERT_TRUE(cml_mesh_axis_name(m, 2) == NULL);
  ASSERT_EQ_INT(cml_mesh_axis_index(m, "data"), 1);
  ASSERT_EQ_INT(cml_mesh_axis_index(m, "model"), -1);
  ASSERT_EQ_INT(cml_mesh_device_count(m), 6);
  ASSERT_TRUE(cml_mesh_device_assignment(m) == NULL);
  int32_t perm[6] = {5, 4, 3, 2, 1, 0};
  ASSERT_STATUS_OK(cml_mesh_set_device_assignment(m, perm, 6));
  ASSERT_EQ_INT(cml_mesh_device_assignment(m)[0], 5);
  ASSERT_STATUS(cml_mesh_set_device_assignment(m, perm, 5), CML_STATUS_INVALID_ARGUMENT, "has 6",
                "got 5");
  int32_t dup[6] = {0, 1, 2, 3, 4, 4};
  ASSERT_STATUS(cml_mesh_set_device_assignment(m, dup, 6), CML_STATUS_INVALID_ARGUMENT,
                "device id 4 appears twice");
  int32_t out[6] = {0, 1, 2, 3, 4, 6};
  ASSERT_STATUS(cml_mesh_set_device_assignment(m, out, 6), CML_STATUS_INVALID_ARGUMENT,
                "device id 6", "out of range");
  ASSERT_EQ_INT(cml_mesh_device_assignment(m)[0], 5);  // unchanged by the failures
  ASSERT_STATUS_OK(cml_mesh_set_device_assignment(m, NULL, 0));
  ASSERT_TRUE(cml_mesh_device_assignment(m) == NULL);
  cml_mesh_destroy(m);
  cml_mesh_destroy(NULL);
  ASSERT_EQ_INT(cml_mesh_device_count(NULL), 0);
}

TEST(mesh_create_errors) {
  cml_mesh_t* m = (cml_mesh_t*)1;
  const char* names[3] = {"a", "b", "a"};
  int64_t sizes[3] = {2, 2, 2};
  ASSERT_STATUS(cml_mesh_create("m", names, sizes, 3, &m), CML_STATUS_INVALID_ARGUMENT,
                "axis name \"a\" used twice");
  ASSERT_TRUE(m == NULL);
  const char* digit[1] = {"0x"};
  ASSERT_STATUS(cml_mesh_create("m", digit, sizes, 1, &m), CML_STATUS_INVALID_ARGUMENT,
                "invalid name \"0x\"");
  ASSERT_STATUS(cml_mesh_create("bad name", names, sizes, 1, &m), CML_STATUS_INVALID_ARGUMENT,
                "invalid mesh name");
  int64_t zero[1] = {0};
  ASSERT_STATUS(cml_mesh_create("m", names, zero, 1, &m), CML_STATUS_INVALID_ARGUMENT,
                "axis \"a\" has size 0");
  ASSERT_STATUS(cml_mesh_create("m", names, sizes, 0, &m), CML_STATUS_INVALID_ARGUMENT, "0 axes");
  const char* many[9] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
  int64_t ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  ASSERT_STATUS(cml_mesh_create("m", many, ones, 9, &m), CML_STATUS_INVALID_ARGUMENT, "9 axes");
  int64_t huge[2] = {1 << 16, 1 << 16};
  const char* two[2] = {"a", "b"};
  ASSERT_STATUS(cml_mesh_create("m", two, huge, 2, &m), CML_STATUS_INVALID_ARGUMENT, "2^31-1");
}

// Expects |groups| to be exactly |want| (count x size ids).
static bool groups_are(const cml_replica_groups_t* g, size_t count, size_t size,
                       const int32_t* want) {
  bool ok = g->group_count == count && g->group_size == size;
  for (size_t i = 0; ok && i < count * size; ++i) ok = g->ids[i] == want[i];
  if (!ok) {
    fprintf(stderr, "groups: %zu x %zu:", g->group_count, g->group_size);
    for (size_t i = 0; i < g->group_count * g->group_size; ++i) fprintf(stderr, " %d", g->ids[i]);
    fprintf(stderr, "\n");
  }
  return ok;
}

TEST(replica_groups_gomlx_examples) {
  cml_mesh_t* m = mesh2("mesh", "batch", 2, "data", 2);
  ASSERT_TRUE(m != NULL);
  int32_t ids[4];
  cml_replica_groups_t g;
  const char* batch[1] = {"batch"};
  ASSERT_STATUS_OK(cml_mesh_replica_groups(m, batch, 1, ids, 4, &g));
  ASSERT_TRUE(groups_are(&g, 2, 2, (const int32_t[]){0, 2, 1, 3}));
  const char* data[1] = {"data"};
  ASSERT_STATUS_OK(cml_mesh_replica_groups(m, data, 1, ids, 4, &g));
  ASSERT_TRUE(groups_are(&g, 2, 2, (const int32_t[]){0, 1, 2, 3}));
  const char* both[2] = {"batch", "data"};
  ASSERT_STATUS_OK(cml_mesh_replica_groups(m, both, 2, ids, 4, &g));
  ASSERT_TRUE(groups_are(&g, 1, 4, (const int32_t[]){0, 1, 2, 3}));
  // The first listed axis is major inside a group.
  const char* swapped[2] = {"data", "batch"};
  ASSERT_STATUS_OK(cml_mesh_replica_groups(m, swapped, 2, ids, 4, &g));
  ASSERT_TRUE(groups_are(&g, 1, 4, (const int32_t[]){0, 2, 1, 3}));
  // The logical device assignment is not applied (as GoMLX).
  int32_t perm[4] = {3, 2, 1, 0};
  ASSERT_STATUS_OK(cml_mesh_set_device_assignment(m, perm, 4));
  ASSERT_STATUS_OK(cml_mesh_replica_groups(m, batch, 1, ids, 4, &g));
  ASSERT_TRUE(groups_are(&g, 2, 2, (const int32_t[]){0, 2, 1, 3}));
  const char* unknown[1] = {"model"};
  ASSERT_STATUS(cml_mesh_replica_groups(m, unknown, 1, ids, 4, &g), CML_STATUS_INVALID_ARGUMENT,
                "unknown axis \"model\"", "batch=2");
  const char* twice[2] = {"data", "data"};
  ASSERT_STATUS(cml_mesh_replica_groups(m, twice, 2, ids, 4, &g), CML_STATUS_INVALID_ARGUMENT,
                "\"data\"", "listed twice");
  ASSERT_STATUS(cml_mesh_replica_groups(m, batch, 1, ids, 3, &g), CML_STATUS_INVALID_ARGUMENT,
                "capacity is 3");
  cml_mesh_destroy(m);
  // A 3-axis mesh {x: 2, y: 3, z: 2}: groups along y, one per (x, z), positions x*6 + y*2 + z.
  const char* names[3] = {"x", "y", "z"};
  int64_t sizes[3] = {2, 3, 2};
  ASSERT_STATUS_OK(cml_mesh_create("m3", names, sizes, 3, &m));
  int32_t ids12[12];
  const char* y[1] = {"y"};
  ASSERT_STATUS_OK(cml_mesh_replica_groups(m, y, 1, ids12, 12, &g));
  ASSERT_TRUE(groups_are(&g, 4, 3, (const int32_t[]){0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11}));
  const char* zx[2] = {"z", "x"};
  ASSERT_STATUS_OK(cml_mesh_replica_groups(m, zx, 2, ids12, 12, &g));
  ASSERT_TRUE(groups_are(&g, 3, 4, (const int32_t[]){0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}));
  cml_mesh_destroy(m);
}

//===--- sharding specs ---===//

TEST(sharding_specs) {
  cml_mesh_t* m = mesh2("mesh", "data", 2, "model", 4);
  ASSERT_TRUE(m != NULL);
  cml_sharding_t s;
  const char* spec[2] = {NULL, "model"};
  ASSERT_STATUS_OK(cml_sharding_make(m, spec, 2, &s));
  char text[256];
  cml_sharding_format(&s, text, sizeof text);
  ASSERT_STREQ(text, "ShardingSpec{mesh=mesh, axes=[R, S(model)]}");
  ASSERT_EQ_INT(cml_sharding_format(&s, NULL, 0), strlen(text));
  ASSERT_FALSE(cml_sharding_is_replicated(&s));
  ASSERT_EQ_INT(cml_sharding_num_shards(&s, 0), 1);
  ASSERT_EQ_INT(cml_sharding_num_shards(&s, 1), 4);
  ASSERT_EQ_INT(cml_sharding_num_shards(&s, 7), 1);
  cml_shape_t logical = SHAPE(CML_DTYPE_F32, 6, 8, 5), shard, back;
  ASSERT_STATUS_OK(cml_sharding_shard_shape(&s, &logical, &shard));
  ASSERT_TRUE(cml_shape_equal(&shard, SHAPE_PTR(CML_DTYPE_F32, 6, 2, 5)));
  ASSERT_STATUS_OK(cml_sharding_logical_shape(&s, &shard, &back));
  ASSERT_TRUE(cml_shape_equal(&back, &logical));
  // Mesh position 6 = (data 1, model 2): replicated along data, model shard 2 -> offset 4.
  int64_t off[3];
  ASSERT_STATUS_OK(cml_sharding_shard_offsets(&s, &logical, 6, off));
  ASSERT_EQ_INT(off[0], 0);
  ASSERT_EQ_INT(off[1], 4);
  ASSERT_EQ_INT(off[2], 0);
  ASSERT_STATUS(cml_sharding_shard_offsets(&s, &logical, 8, off), CML_STATUS_INVALID_ARGUMENT,
                "position 8 out of range");

  // Two mesh axes on one tensor axis, major to minor: shard index = data * 4 + model.
  const char* both[1] = {"data, model"};
  ASSERT_STATUS_OK(cml_sharding_make(m, both, 1, &s));
  cml_sharding_format(&s, text, sizeof text);
  ASSERT_STREQ(text, "ShardingSpec{mesh=mesh, axes=[S(data, model)]}");
  cml_shape_t v = SHAPE(CML_DTYPE_F32, 16);
  ASSERT_STATUS_OK(cml_sharding_shard_shape(&s, &v, &shard));
  ASSERT_EQ_INT(shard.dims[0], 2);
  ASSERT_STATUS_OK(cml_sharding_shard_offsets(&s, &v, 5, off));  // data 1, model 1 -> 5
  ASSERT_EQ_INT(off[0], 10);

  // Errors: unknown axis, axis used twice, not divisible, rank above the shape's.
  const char* unknown[1] = {"pipe"};
  ASSERT_STATUS(cml_sharding_make(m, unknown, 1, &s), CML_STATUS_INVALID_ARGUMENT,
                "unknown mesh axis \"pipe\"", "mesh{data=2, model=4}");
  const char* twice[2] = {"model", "model"};
  ASSERT_STATUS(cml_sharding_make(m, twice, 2, &s), CML_STATUS_INVALID_ARGUMENT,
                "mesh axis \"model\"", "used twice", "tensor axes 0 and 1");
  // An empty item anywhere in a list is an error, at the end and alone too (once "data," and
  // "," were taken as "data" and as replicated); blanks alone are replicated.
  static const char* const empty_items[] = {"data,,model", "data,", ",data", ",", " , "};
  for (size_t i = 0; i < sizeof empty_items / sizeof *empty_items; ++i) {
    ASSERT_STATUS(cml_sharding_make(m, &empty_items[i], 1, &s), CML_STATUS_INVALID_ARGUMENT,
                  "empty mesh axis name");
  }
  const char* blanks[2] = {" \t", ""};
  ASSERT_STATUS_OK(cml_sharding_make(m, blanks, 2, &s));
  ASSERT_TRUE(cml_sharding_is_replicated(&s));
  // Names are compared at full length: 200 'a's are not the axis of 127 'a's (once cut to 127
  // characters and matched).
  {
    char long_axis[128], longer[201];
    memset(long_axis, 'a', 127);
    long_axis[127] = '\0';
    memset(longer, 'a', 200);
    longer[200] = '\0';
    const char* names[1] = {long_axis};
    const int64_t sizes[1] = {2};
    cml_mesh_t* lm = NULL;
    ASSERT_STATUS_OK(cml_mesh_create("long", names, sizes, 1, &lm));
    const char* exact[1] = {long_axis};
    ASSERT_STATUS_OK(cml_sharding_make(lm, exact, 1, &s));
    const char* too_long[1] = {longer};
    ASSERT_STATUS(cml_sharding_make(lm, too_long, 1, &s), CML_STATUS_INVALID_ARGUMENT,
                  "unknown mesh axis");
    cml_mesh_destroy(lm);
  }
  ASSERT_STATUS_OK(cml_sharding_make(m, spec, 2, &s));
  cml_shape_t odd = SHAPE(CML_DTYPE_F32, 6, 6);
  ASSERT_STATUS(cml_sharding_shard_shape(&s, &odd, &shard), CML_STATUS_INVALID_ARGUMENT,
                "dimension 1", "(size 6)", "not divisible by its 4 shards", "\"model\"");
  cml_shape_t vec = SHAPE(CML_DTYPE_F32, 8);
  ASSERT_STATUS(cml_sharding_shard_shape(&s, &vec, &shard), CML_STATUS_INVALID_ARGUMENT, "rank 2",
                "rank 1");
  // The logical shape must be a shape: a negative dim gave a negative shard.
  cml_shape_t negative = SHAPE(CML_DTYPE_F32, 8, 8);
  negative.dims[0] = -4;
  ASSERT_STATUS(cml_sharding_shard_shape(&s, &negative, &shard), CML_STATUS_INVALID_ARGUMENT,
                "logical shape");
  cml_sharding_t bad = s;
  bad.mesh_axes[1][0] = 9;
  ASSERT_STATUS(cml_sharding_validate(&bad), CML_STATUS_INVALID_ARGUMENT, "mesh axis index 9");
  bad = s;
  bad.axis_count[3] = 1;
  ASSERT_STATUS(cml_sharding_validate(&bad), CML_STATUS_INVALID_ARGUMENT, "tensor axis 3",
                "rank 2");
  ASSERT_STATUS(cml_sharding_make(NULL, spec, 2, &s), CML_STATUS_INVALID_ARGUMENT, "NULL mesh");

  // Replicated and zeroed specs.
  cml_sharding_replicated(m, &s);
  ASSERT_TRUE(cml_sharding_is_replicated(&s));
  cml_sharding_format(&s, text, sizeof text);
  ASSERT_STREQ(text, "ShardingSpec{mesh=mesh, axes=[]}");
  ASSERT_STATUS_OK(cml_sharding_shard_shape(&s, &odd, &shard));
  ASSERT_TRUE(cml_shape_equal(&shard, &odd));
  cml_sharding_t zero;
  memset(&zero, 0, sizeof zero);
  ASSERT_TRUE(cml_sharding_is_replicated(&zero));
  ASSERT_TRUE(cml_sharding_is_replicated(NULL));
  cml_mesh_destroy(m);
}

//===--- SPMD builders ---===//

TEST(spmd_builder_and_module_fields) {
  fake_backend_t* fb = multi_backend(4, SPMD_BIT);
  ASSERT_TRUE(fb != NULL);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "spmd", &b));
  ASSERT_EQ_INT(cml_builder_distribution(b), CML_DISTRIBUTION_NONE);
  ASSERT_EQ_INT(cml_builder_num_devices(b), 1);
  ASSERT_STATUS(cml_builder_spmd(b, 0), CML_STATUS_INVALID_ARGUMENT, "0 devices");
  ASSERT_STATUS(cml_builder_spmd(b, 5), CML_STATUS_INVALID_ARGUMENT, "over 5 devices",
                "backend \"fake\" has 4 devices");
  ASSERT_STATUS(cml_builder_device_assignment(b, (const int32_t[]){0}, 1),
                CML_STATUS_FAILED_PRECONDITION, "one device");
  ASSERT_STATUS_OK(cml_builder_spmd(b, 4));
  ASSERT_EQ_INT(cml_builder_distribution(b), CML_DISTRIBUTION_SPMD);
  ASSERT_EQ_INT(cml_builder_num_devices(b), 4);
  ASSERT_STATUS(cml_builder_spmd(b, 4), CML_STATUS_FAILED_PRECONDITION, "already runs SPMD");
  ASSERT_STATUS(cml_builder_device_assignment(b, (const int32_t[]){0, 1, 2}, 3),
                CML_STATUS_INVALID_ARGUMENT, "4 device slots", "got 3");
  ASSERT_STATUS(cml_builder_device_assignment(b, (const int32_t[]){0, 1, 2, 4}, 4),
                CML_STATUS_INVALID_ARGUMENT, "device 4 of slot 3", "devices 0..3");
  ASSERT_STATUS(cml_builder_device_assignment(b, (const int32_t[]){0, 1, 2, 1}, 4),
                CML_STATUS_INVALID_ARGUMENT, "device 1 is assigned to slots 1 and 3");
  ASSERT_STATUS_OK(cml_builder_device_assignment(b, (const int32_t[]){3, 2, 1, 0}, 4));
  ASSERT_STATUS(cml_builder_device_assignment(b, (const int32_t[]){3, 2, 1, 0}, 4),
                CML_STATUS_FAILED_PRECONDITION, "already set");
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t sum;
  ASSERT_TRUE(cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, NULL, &sum));
  ASSERT_STATUS_OK(cml_function_return(f, &sum, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  const cml_module_t* m = fb->module;
  ASSERT_EQ_INT(m->distribution, CML_DISTRIBUTION_SPMD);
  ASSERT_EQ_INT(m->num_devices, 4);
  ASSERT_EQ_INT(m->device_assignment[0], 3);
  ASSERT_EQ_INT(m->device_assignment[3], 0);
  ASSERT_EQ_INT(m->mesh_count, 0);
  ASSERT_TRUE(m->param_shardings == NULL && m->output_shardings == NULL);
  ASSERT_EQ_INT(cml_executable_distribution(exe), CML_DISTRIBUTION_SPMD);
  ASSERT_EQ_INT(cml_executable_num_devices(exe), 4);
  ASSERT_TRUE(cml_executable_input_sharding(exe, 0) == NULL);
  // Per-device shapes are the program's under SPMD.
  ASSERT_TRUE(cml_shape_equal(cml_executable_input_shape(exe, 0), &s));

  // The module dump shows the distribution and the collective's groups.
  char* dump = NULL;
  size_t dump_size = 0;
  FILE* mem = open_memstream(&dump, &dump_size);
  ASSERT_TRUE(mem != NULL);
  cml_module_dump(m, mem);
  fclose(mem);
  ASSERT_CONTAINS(dump, "distribution SPMD over 4 devices, assignment [3, 2, 1, 0]");
  ASSERT_CONTAINS(dump, "AllReduce(%1) type=Sum groups={{0, 1, 2, 3}}");
  free(dump);

  // Execute checks the device-major inputs against the device assignment: slot j's input must
  // be on device 3 - j.
  cml_buffer_t bufs[4];
  cml_buffer_t* inputs[4];
  for (int j = 0; j < 4; ++j) {
    cml_buffer_init_base(&bufs[j], &fb->base, &s, j, false);
    inputs[j] = &bufs[j];
  }
  cml_buffer_t* outs[4];
  ASSERT_STATUS(cml_executable_execute(exe, inputs, 4, NULL, 0, outs), CML_STATUS_INVALID_ARGUMENT,
                "input 0", "device slot 0", "is on device 0", "slot 0 runs on device 3");
  ASSERT_STATUS(cml_executable_execute(exe, inputs, 3, NULL, 0, outs), CML_STATUS_INVALID_ARGUMENT,
                "expected 4 inputs", "x 4 devices", "got 3");
  for (int j = 0; j < 4; ++j) inputs[j] = &bufs[3 - j];
  // Placement right: the fake backend cannot execute, which comes after every input check.
  ASSERT_STATUS(cml_executable_execute(exe, inputs, 4, NULL, 0, outs), CML_STATUS_UNIMPLEMENTED,
                "cannot execute");
  for (int j = 0; j < 4; ++j) cml_buffer_deinit_base(&bufs[j]);
  cml_executable_release(exe);
  cml_builder_destroy(b);
  cml_backend_release(&fb->base);
}

TEST(spmd_backend_refusals) {
  // The core sets the NONE bit for every backend; without the SPMD bit the builder refuses,
  // naming the backend.
  fake_backend_t* fb = multi_backend(4, 0);
  ASSERT_TRUE(fb != NULL);
  ASSERT_EQ_INT(fb->base.capabilities.distributions, 1u << CML_DISTRIBUTION_NONE);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "x", &b));
  ASSERT_STATUS(cml_builder_spmd(b, 2), CML_STATUS_UNIMPLEMENTED, "backend \"fake\"",
                "does not run SPMD modules", "strategies: None");
  cml_mesh_t* m = mesh2("mesh", "data", 2, NULL, 0);
  ASSERT_TRUE(m != NULL);
  const cml_mesh_t* meshes[1] = {m};
  ASSERT_STATUS(cml_builder_auto_sharding(b, meshes, 1), CML_STATUS_UNIMPLEMENTED,
                "backend \"fake\"", "AutoSharding");
  cml_builder_destroy(b);
  cml_backend_release(&fb->base);

  // After the first op the strategy can no longer change.
  fb = multi_backend(4, SPMD_BIT | AUTO_BIT);
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "x", &b));
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  (void)cml_parameter(cml_builder_main(b), "x", &s);
  ASSERT_STATUS(cml_builder_spmd(b, 2), CML_STATUS_FAILED_PRECONDITION, "before the first one");
  cml_builder_destroy(b);
  cml_backend_release(&fb->base);

  // Every real backend gets the NONE bit.
  cml_backend_t* c = NULL;
  cml_status_t st = cml_backend_new_with_config("c", &c);
  if (st == CML_OK) {
    ASSERT_TRUE(cml_backend_capabilities(c)->distributions & (1u << CML_DISTRIBUTION_NONE));
    cml_backend_release(c);
  } else {
    cml_status_free(st);
  }
  cml_mesh_destroy(m);
}

//===--- collectives ---===//

// A builder on a 4-device SPMD fake backend.
#define SPMD_SETUP(n)                                         \
  fake_backend_t* fb = multi_backend(4, SPMD_BIT | AUTO_BIT); \
  ASSERT_TRUE(fb != NULL);                                    \
  cml_builder_t* b = NULL;                                    \
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "c", &b));   \
  ASSERT_STATUS_OK(cml_builder_spmd(b, (n)));                 \
  cml_function_t* f = cml_builder_main(b)
#define TEARDOWN()        \
  cml_builder_destroy(b); \
  cml_backend_release(&fb->base)

static bool value_shape_is(const cml_builder_t* b, cml_value_t v, cml_shape_t want) {
  cml_shape_t got;
  if (!cml_builder_value_shape(b, v, &got) || !cml_shape_equal(&got, &want)) {
    char g[160], w[160];
    fprintf(stderr, "shape %s, want %s\n", cml_shape_format(&got, g, sizeof g),
            cml_shape_format(&want, w, sizeof w));
    return false;
  }
  return true;
}

// The IR attributes of value |v|'s node.
static const cml_ir_attrs_t* attrs_of(const cml_builder_t* b, cml_value_t v) {
  const cml__module_impl_t* impl = b->impl;
  return cml__value_node(impl, v & CML__VALUE_INDEX_MASK)->attrs;
}

TEST(collective_shapes_and_attrs) {
  SPMD_SETUP(4);
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 4, 6);
  cml_shape_t si = SHAPE(CML_DTYPE_I32, 3);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t y = cml_parameter(f, "y", &si);
  // AllReduce with two operands of different dtypes and groups {{0, 2}, {1, 3}}.
  cml_replica_groups_t g = {(const int32_t[]){0, 2, 1, 3}, 2, 2};
  cml_value_t ops[2] = {x, y}, res[2];
  ASSERT_TRUE(cml_op_all_reduce(f, ops, 2, CML_REDUCE_MAX, &g, res));
  ASSERT_TRUE(value_shape_is(b, res[0], s));
  ASSERT_TRUE(value_shape_is(b, res[1], si));
  const cml_ir_attrs_t* a = attrs_of(b, res[0]);
  ASSERT_EQ_INT(a->reduce_type, CML_REDUCE_MAX);
  ASSERT_EQ_INT(a->collective.group_count, 2);
  ASSERT_EQ_INT(a->collective.group_size, 2);
  ASSERT_EQ_INT(a->collective.groups[1], 2);
  ASSERT_EQ_INT(a->collective.groups[2], 1);
  // In place: the results may overwrite the operand array.
  cml_value_t inplace[2] = {x, y};
  ASSERT_TRUE(cml_op_all_reduce(f, inplace, 2, CML_REDUCE_SUM, NULL, inplace));
  ASSERT_TRUE(inplace[0] != x && inplace[1] != y);
  ASSERT_TRUE(value_shape_is(b, inplace[0], s));
  ASSERT_TRUE(value_shape_is(b, inplace[1], si));
  ASSERT_EQ_INT(cml__value_node(b->impl, inplace[0] & CML__VALUE_INDEX_MASK)->inputs[1],
                y & CML__VALUE_INDEX_MASK);
  // AllGather: dim * group size, in the given axis.
  cml_value_t ag = cml_op_all_gather(f, x, 1, &g);
  ASSERT_TRUE(value_shape_is(b, ag, SHAPE(CML_DTYPE_F32, 4, 12)));
  ASSERT_EQ_INT(attrs_of(b, ag)->axis, 1);
  cml_value_t ag_all = cml_op_all_gather(f, x, 0, NULL);
  ASSERT_TRUE(value_shape_is(b, ag_all, SHAPE(CML_DTYPE_F32, 16, 6)));
  a = attrs_of(b, ag_all);
  ASSERT_EQ_INT(a->collective.group_count, 1);
  ASSERT_EQ_INT(a->collective.group_size, 4);
  ASSERT_EQ_INT(a->collective.groups[3], 3);
  // ReduceScatter: dim / group size.
  cml_value_t rs = cml_op_reduce_scatter(f, x, CML_REDUCE_SUM, 0, NULL);
  ASSERT_TRUE(value_shape_is(b, rs, SHAPE(CML_DTYPE_F32, 1, 6)));
  ASSERT_EQ_INT(attrs_of(b, rs)->reduce_type, CML_REDUCE_SUM);
  ASSERT_EQ_INT(attrs_of(b, rs)->axis, 0);
  // AllToAll: split axis / n, concat axis * n.
  cml_value_t at = cml_op_all_to_all(f, x, 1, 0, &g);
  ASSERT_TRUE(value_shape_is(b, at, SHAPE(CML_DTYPE_F32, 8, 3)));
  ASSERT_EQ_INT(attrs_of(b, at)->collective.split_axis, 1);
  ASSERT_EQ_INT(attrs_of(b, at)->collective.concat_axis, 0);
  cml_value_t at_same = cml_op_all_to_all(f, x, 0, 0, NULL);
  ASSERT_TRUE(value_shape_is(b, at_same, s));
  // CollectivePermute: same shape, pairs copied.
  int32_t pairs[6] = {0, 1, 1, 2, 2, 0};
  cml_value_t cp = cml_op_collective_permute(f, x, pairs, 3);
  pairs[0] = 9;  // the builder keeps its own copy
  ASSERT_TRUE(value_shape_is(b, cp, s));
  a = attrs_of(b, cp);
  ASSERT_EQ_INT(a->collective.pair_count, 3);
  ASSERT_EQ_INT(a->collective.pairs[0], 0);
  ASSERT_EQ_INT(a->collective.pairs[5], 0);
  ASSERT_TRUE(a->collective.groups == NULL);
  cml_value_t cb = cml_op_collective_broadcast(f, y, &g);
  ASSERT_TRUE(value_shape_is(b, cb, si));
  ASSERT_EQ_INT(attrs_of(b, cb)->collective.group_size, 2);
  cml_value_t rid = cml_op_replica_id(f);
  cml_value_t pid = cml_op_partition_id(f);
  ASSERT_TRUE(value_shape_is(b, rid, cml_shape_scalar(CML_DTYPE_U32)));
  ASSERT_TRUE(value_shape_is(b, pid, cml_shape_scalar(CML_DTYPE_U32)));
  ASSERT_STATUS_OK(cml_builder_status(b));
  TEARDOWN();
}

TEST(collective_bad_groups) {
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 4);
  {
    SPMD_SETUP(4);
    cml_value_t x = cml_parameter(f, "x", &s);
    cml_replica_groups_t g = {(const int32_t[]){0, 1, 1, 3}, 2, 2};
    ASSERT_TRUE(cml_op_all_gather(f, x, 0, &g) == CML_VALUE_INVALID);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "AllGather", "{{0, 1}, {1, 3}}",
                         "device slot 1 appears twice", "partition");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_value_t x = cml_parameter(f, "x", &s);
    cml_replica_groups_t g = {(const int32_t[]){0, 1, 2}, 1, 3};
    cml_value_t r;
    ASSERT_FALSE(cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, &g, &r));
    ASSERT_TRUE(r == CML_VALUE_INVALID);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "AllReduce", "{{0, 1, 2}}",
                         "1 groups of 3 devices", "runs on 4 devices", "equal size");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_value_t x = cml_parameter(f, "x", &s);
    cml_replica_groups_t g = {(const int32_t[]){0, 1, 2, 7}, 1, 4};
    (void)cml_op_collective_broadcast(f, x, &g);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "CollectiveBroadcast",
                         "device slot 7 is out of range");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_value_t x = cml_parameter(f, "x", &s);
    cml_replica_groups_t g = {NULL, 2, 2};
    (void)cml_op_reduce_scatter(f, x, CML_REDUCE_SUM, 0, &g);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "ReduceScatter", "NULL ids");
    TEARDOWN();
  }
}

TEST(collective_bad_shapes_and_pairs) {
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 6, 4);
  {
    SPMD_SETUP(4);
    cml_value_t x = cml_parameter(f, "x", &s);
    (void)cml_op_reduce_scatter(f, x, CML_REDUCE_SUM, 0, NULL);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "ReduceScatter", "(Float32)[6, 4]",
                         "(size 6) is not divisible by the group size 4");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_value_t x = cml_parameter(f, "x", &s);
    (void)cml_op_all_to_all(f, x, 0, 1, NULL);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "AllToAll", "split axis 0",
                         "not divisible by the group size 4");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_value_t x = cml_parameter(f, "x", &s);
    (void)cml_op_all_gather(f, x, 2, NULL);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "AllGather", "axis 2 out of range",
                         "(Float32)[6, 4]");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_value_t x = cml_parameter(f, "x", &s);
    (void)cml_op_all_to_all(f, x, 1, -1, NULL);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "AllToAll", "concat axis -1");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_value_t x = cml_parameter(f, "x", &s);
    int32_t pairs[4] = {0, 1, 0, 2};
    (void)cml_op_collective_permute(f, x, pairs, 2);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "CollectivePermute",
                         "device slot 0 is the source of pairs #0 and #1");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_value_t x = cml_parameter(f, "x", &s);
    int32_t pairs[4] = {0, 1, 2, 1};
    (void)cml_op_collective_permute(f, x, pairs, 2);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "CollectivePermute",
                         "device slot 1 is the target of pairs #0 and #1");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_value_t x = cml_parameter(f, "x", &s);
    int32_t pairs[2] = {0, 4};
    (void)cml_op_collective_permute(f, x, pairs, 1);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "CollectivePermute", "(0 -> 4)",
                         "out of range [0, 4)");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_shape_t sb = SHAPE(CML_DTYPE_BOOL, 4);
    cml_value_t x = cml_parameter(f, "x", &sb);
    cml_value_t r;
    ASSERT_FALSE(cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, NULL, &r));
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "AllReduce", "dtype Bool");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_shape_t sc = SHAPE(CML_DTYPE_C64, 4);
    cml_value_t x = cml_parameter(f, "x", &sc);
    cml_value_t r;
    ASSERT_FALSE(cml_op_all_reduce(f, &x, 1, CML_REDUCE_MAX, NULL, &r));
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "AllReduce", "Max", "complex");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_value_t x = cml_parameter(f, "x", &s);
    cml_value_t r;
    ASSERT_FALSE(cml_op_all_reduce(f, &x, 1, (cml_reduce_type_t)9, NULL, &r));
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "AllReduce", "reduction type 9");
    TEARDOWN();
  }
  {
    SPMD_SETUP(4);
    cml_value_t r;
    ASSERT_FALSE(cml_op_all_reduce(f, NULL, 0, CML_REDUCE_SUM, NULL, &r));
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "AllReduce", "no operands");
    TEARDOWN();
  }
}

TEST(collective_without_spmd) {
  // One device (no strategy): every collective is INVALID_ARGUMENT naming the op.
  static const cml_op_t ops[] = {CML_OP_ALL_REDUCE,         CML_OP_ALL_GATHER,
                                 CML_OP_REDUCE_SCATTER,     CML_OP_ALL_TO_ALL,
                                 CML_OP_COLLECTIVE_PERMUTE, CML_OP_COLLECTIVE_BROADCAST,
                                 CML_OP_REPLICA_ID,         CML_OP_PARTITION_ID};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; ++k) {
    for (int mode = 0; mode < 2; ++mode) {
      fake_backend_t* fb = multi_backend(4, SPMD_BIT | AUTO_BIT);
      ASSERT_TRUE(fb != NULL);
      cml_builder_t* b = NULL;
      ASSERT_STATUS_OK(cml_builder_create(&fb->base, "c", &b));
      cml_mesh_t* m = mesh2("mesh", "data", 4, NULL, 0);
      const cml_mesh_t* meshes[1] = {m};
      if (mode == 1) ASSERT_STATUS_OK(cml_builder_auto_sharding(b, meshes, 1));
      cml_function_t* f = cml_builder_main(b);
      cml_shape_t s = SHAPE(CML_DTYPE_F32, 4);
      cml_value_t x = cml_parameter(f, "x", &s), r = CML_VALUE_INVALID;
      switch (ops[k]) {
        case CML_OP_ALL_REDUCE:
          ASSERT_FALSE(cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, NULL, &r));
          break;
        case CML_OP_ALL_GATHER:
          r = cml_op_all_gather(f, x, 0, NULL);
          break;
        case CML_OP_REDUCE_SCATTER:
          r = cml_op_reduce_scatter(f, x, CML_REDUCE_SUM, 0, NULL);
          break;
        case CML_OP_ALL_TO_ALL:
          r = cml_op_all_to_all(f, x, 0, 0, NULL);
          break;
        case CML_OP_COLLECTIVE_PERMUTE:
          r = cml_op_collective_permute(f, x, NULL, 0);
          break;
        case CML_OP_COLLECTIVE_BROADCAST:
          r = cml_op_collective_broadcast(f, x, NULL);
          break;
        case CML_OP_REPLICA_ID:
          r = cml_op_replica_id(f);
          break;
        default:
          r = cml_op_partition_id(f);
          break;
      }
      ASSERT_TRUE(r == CML_VALUE_INVALID);
      if (mode == 0) {
        ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, cml_op_name(ops[k]),
                             "collective op in a module without SPMD");
      } else {
        ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, cml_op_name(ops[k]),
                             "not allowed in an AutoSharding module");
      }
      cml_mesh_destroy(m);
      cml_builder_destroy(b);
      cml_backend_release(&fb->base);
    }
  }
}

TEST(collective_backend_without_op) {
  // A backend with SPMD but without the op: UNIMPLEMENTED naming the op and the backend.
  fake_backend_t* fb = multi_backend(2, SPMD_BIT);
  ASSERT_TRUE(fb != NULL);
  cml_capabilities_set_op(&fb->base.capabilities, CML_OP_ALL_GATHER, false);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "c", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 2));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 4);
  cml_value_t x = cml_parameter(f, "x", &s);
  ASSERT_TRUE(cml_op_all_gather(f, x, 0, NULL) == CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_UNIMPLEMENTED, "AllGather", "backend \"fake\"", "(Float32)[4]",
                       "(Float32)[8]");
  cml_builder_destroy(b);
  cml_backend_release(&fb->base);
}

//===--- AutoSharding ---===//

TEST(auto_sharding_builder_and_executable_shapes) {
  fake_backend_t* fb = multi_backend(4, AUTO_BIT);
  ASSERT_TRUE(fb != NULL);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "tp", &b));
  cml_mesh_t* m = mesh2("mesh", "data", 2, "model", 2);
  cml_mesh_t* single = mesh2("one", "x", 1, NULL, 0);
  ASSERT_TRUE(m && single);
  int32_t perm[4] = {1, 0, 3, 2};
  ASSERT_STATUS_OK(cml_mesh_set_device_assignment(m, perm, 4));
  const cml_mesh_t* meshes[2] = {single, m};
  ASSERT_STATUS_OK(cml_builder_auto_sharding(b, meshes, 2));
  ASSERT_EQ_INT(cml_builder_distribution(b), CML_DISTRIBUTION_AUTO_SHARDING);
  ASSERT_EQ_INT(cml_builder_num_devices(b), 4);
  cml_function_t* f = cml_builder_main(b);
  cml_sharding_t xs, ws, ys;
  ASSERT_STATUS_OK(cml_sharding_make(m, (const char* const[]){"data"}, 1, &xs));
  ASSERT_STATUS_OK(cml_sharding_make(m, (const char* const[]){NULL, "model"}, 2, &ws));
  ASSERT_STATUS_OK(cml_sharding_make(m, (const char* const[]){"data", "model"}, 2, &ys));
  cml_shape_t x_shape = SHAPE(CML_DTYPE_F32, 4, 3), w_shape = SHAPE(CML_DTYPE_F32, 3, 6);
  cml_shape_t b_shape = SHAPE(CML_DTYPE_F32, 6);
  cml_value_t x = cml_parameter_sharded(f, "x", &x_shape, &xs);
  cml_value_t w = cml_parameter_sharded(f, "w", &w_shape, &ws);
  cml_value_t bias = cml_parameter(f, "bias", &b_shape);  // replicated by default
  ASSERT_STATUS_OK(cml_builder_status(b));
  cml_value_t y = cml_op_dot(f, x, w);
  ASSERT_TRUE(value_shape_is(b, y, SHAPE(CML_DTYPE_F32, 4, 6)));  // logical shapes
  cml_value_t outs[2] = {y, bias};
  cml_sharding_t out_specs[2];
  out_specs[0] = ys;
  memset(&out_specs[1], 0, sizeof out_specs[1]);
  ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 2, out_specs));
  // The caller's mesh may go: the module owns copies.
  cml_mesh_destroy(m);
  cml_mesh_destroy(single);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  const cml_module_t* mod = fb->module;
  ASSERT_EQ_INT(mod->distribution, CML_DISTRIBUTION_AUTO_SHARDING);
  ASSERT_EQ_INT(mod->num_devices, 4);
  ASSERT_EQ_INT(mod->device_assignment[2], 2);
  ASSERT_EQ_INT(mod->mesh_count, 2);
  ASSERT_STREQ(cml_mesh_name(mod->meshes[1]), "mesh");
  ASSERT_EQ_INT(cml_mesh_device_assignment(mod->meshes[1])[0], 1);
  ASSERT_TRUE(mod->param_shardings[0].mesh == mod->meshes[1]);
  ASSERT_TRUE(mod->param_shardings[2].mesh == mod->meshes[1]);  // default: largest mesh
  ASSERT_TRUE(cml_sharding_is_replicated(&mod->param_shardings[2]));
  ASSERT_TRUE(cml_sharding_is_replicated(&mod->output_shardings[1]));
  // Executable shapes are per-device shards.
  ASSERT_EQ_INT(cml_executable_num_devices(exe), 4);
  ASSERT_TRUE(cml_shape_equal(cml_executable_input_shape(exe, 0), SHAPE_PTR(CML_DTYPE_F32, 2, 3)));
  ASSERT_TRUE(cml_shape_equal(cml_executable_input_shape(exe, 1), SHAPE_PTR(CML_DTYPE_F32, 3, 3)));
  ASSERT_TRUE(cml_shape_equal(cml_executable_input_shape(exe, 2), &b_shape));
  ASSERT_TRUE(cml_shape_equal(cml_executable_output_shape(exe, 0), SHAPE_PTR(CML_DTYPE_F32, 2, 3)));
  const cml_sharding_t* in1 = cml_executable_input_sharding(exe, 1);
  ASSERT_TRUE(in1 != NULL);
  char text[256];
  cml_sharding_format(in1, text, sizeof text);
  ASSERT_STREQ(text, "ShardingSpec{mesh=mesh, axes=[R, S(model)]}");
  ASSERT_TRUE(cml_executable_output_sharding(exe, 0) != NULL);
  ASSERT_TRUE(cml_executable_output_sharding(exe, 2) == NULL);
  ASSERT_TRUE(cml_executable_input_sharding(exe, 3) == NULL);
  char* dump = NULL;
  size_t dump_size = 0;
  FILE* mem = open_memstream(&dump, &dump_size);
  ASSERT_TRUE(mem != NULL);
  cml_module_dump(mod, mem);
  fclose(mem);
  ASSERT_CONTAINS(dump, "distribution AutoSharding over 4 devices");
  ASSERT_CONTAINS(dump, "mesh mesh{data=2, model=2, devices=[1, 0, 3, 2]}");
  ASSERT_CONTAINS(dump, "param #1: ShardingSpec{mesh=mesh, axes=[R, S(model)]}");
  ASSERT_CONTAINS(dump, "output #0: ShardingSpec{mesh=mesh, axes=[S(data), S(model)]}");
  free(dump);
  cml_executable_release(exe);
  cml_builder_destroy(b);
  cml_backend_release(&fb->base);
}

TEST(auto_sharding_errors) {
  fake_backend_t* fb = multi_backend(4, SPMD_BIT | AUTO_BIT);
  ASSERT_TRUE(fb != NULL);
  cml_mesh_t* m4 = mesh2("mesh", "data", 4, NULL, 0);
  cml_mesh_t* m2 = mesh2("other", "data", 2, NULL, 0);
  cml_mesh_t* m8 = mesh2("big", "data", 8, NULL, 0);
  cml_mesh_t* m4b = mesh2("mesh", "model", 4, NULL, 0);
  ASSERT_TRUE(m4 && m2 && m8 && m4b);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "x", &b));
  // Meshes of different device counts, a mesh above the backend's devices, duplicate names.
  ASSERT_STATUS(cml_builder_auto_sharding(b, (const cml_mesh_t* const[]){m4, m2}, 2),
                CML_STATUS_INVALID_ARGUMENT, "mesh{data=4} has 4 devices", "other{data=2} has 2");
  ASSERT_STATUS(cml_builder_auto_sharding(b, (const cml_mesh_t* const[]){m8}, 1),
                CML_STATUS_INVALID_ARGUMENT, "AutoSharding over 8 devices",
                "backend \"fake\" has 4 devices");
  ASSERT_STATUS(cml_builder_auto_sharding(b, (const cml_mesh_t* const[]){m4, m4b}, 2),
                CML_STATUS_INVALID_ARGUMENT, "both named \"mesh\"");
  ASSERT_STATUS(cml_builder_auto_sharding(b, NULL, 0), CML_STATUS_INVALID_ARGUMENT, "no meshes");
  ASSERT_STATUS_OK(cml_builder_auto_sharding(b, (const cml_mesh_t* const[]){m4}, 1));
  cml_function_t* f = cml_builder_main(b);
  cml_sharding_t s4;
  ASSERT_STATUS_OK(cml_sharding_make(m4, (const char* const[]){"data"}, 1, &s4));
  // Not divisible: 6 over 4.
  cml_shape_t bad = SHAPE(CML_DTYPE_F32, 6, 2);
  ASSERT_TRUE(cml_parameter_sharded(f, "x", &bad, &s4) == CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Parameter \"x\"", "(Float32)[6, 2]",
                       "not divisible by its 4 shards");
  cml_builder_destroy(b);

  // A mesh that is not one of the builder's, and one of the same name with other axes.
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "x", &b));
  ASSERT_STATUS_OK(cml_builder_auto_sharding(b, (const cml_mesh_t* const[]){m4}, 1));
  f = cml_builder_main(b);
  cml_sharding_t s2;
  ASSERT_STATUS_OK(cml_sharding_make(m2, (const char* const[]){"data"}, 1, &s2));
  cml_shape_t ok_shape = SHAPE(CML_DTYPE_F32, 8);
  (void)cml_parameter_sharded(f, "x", &ok_shape, &s2);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Parameter \"x\"", "mesh \"other\"",
                       "not one of the builder's meshes");
  cml_builder_destroy(b);
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "x", &b));
  ASSERT_STATUS_OK(cml_builder_auto_sharding(b, (const cml_mesh_t* const[]){m4}, 1));
  f = cml_builder_main(b);
  cml_sharding_t sb;
  ASSERT_STATUS_OK(cml_sharding_make(m4b, (const char* const[]){"model"}, 1, &sb));
  (void)cml_parameter_sharded(f, "x", &ok_shape, &sb);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "mesh{model=4}", "differs");
  cml_builder_destroy(b);

  // A result sharding that does not divide the result.
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "x", &b));
  ASSERT_STATUS_OK(cml_builder_auto_sharding(b, (const cml_mesh_t* const[]){m4}, 1));
  f = cml_builder_main(b);
  cml_value_t x = cml_parameter(f, "x", &bad);
  ASSERT_STATUS(cml_function_return_sharded(f, &x, 1, &s4), CML_STATUS_INVALID_ARGUMENT,
                "Return: output #0", "not divisible");
  cml_builder_destroy(b);

  // Shardings under SPMD.
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "x", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 4));
  f = cml_builder_main(b);
  (void)cml_parameter_sharded(f, "x", &ok_shape, &s4);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Parameter \"x\"",
                       "need an AutoSharding module", "SPMD");
  cml_builder_destroy(b);

  // A sharded parameter of a function other than main.
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "x", &b));
  ASSERT_STATUS_OK(cml_builder_auto_sharding(b, (const cml_mesh_t* const[]){m4}, 1));
  cml_function_t* g = NULL;
  ASSERT_STATUS_OK(cml_builder_new_function(b, "g", &g));
  (void)cml_parameter_sharded(g, "x", &ok_shape, &s4);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "only for parameters of main");
  cml_builder_destroy(b);

  cml_mesh_destroy(m4);
  cml_mesh_destroy(m2);
  cml_mesh_destroy(m8);
  cml_mesh_destroy(m4b);
  cml_backend_release(&fb->base);
}

TEST(auto_sharding_input_placement) {
  // Under AutoSharding inputs are shards: a full-size buffer is refused with both shapes.
  fake_backend_t* fb = multi_backend(2, AUTO_BIT);
  ASSERT_TRUE(fb != NULL);
  cml_mesh_t* m = mesh2("mesh", "data", 2, NULL, 0);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "x", &b));
  ASSERT_STATUS_OK(cml_builder_auto_sharding(b, (const cml_mesh_t* const[]){m}, 1));
  cml_function_t* f = cml_builder_main(b);
  cml_sharding_t s;
  ASSERT_STATUS_OK(cml_sharding_make(m, (const char* const[]){"data"}, 1, &s));
  cml_shape_t logical = SHAPE(CML_DTYPE_F32, 4), shard = SHAPE(CML_DTYPE_F32, 2);
  cml_value_t x = cml_parameter_sharded(f, "x", &logical, &s);
  ASSERT_STATUS_OK(cml_function_return(f, &x, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_buffer_t bufs[2];
  cml_buffer_init_base(&bufs[0], &fb->base, &shard, 0, false);
  cml_buffer_init_base(&bufs[1], &fb->base, &logical, 1, false);
  cml_buffer_t* inputs[2] = {&bufs[0], &bufs[1]};
  cml_buffer_t* outs[2];
  ASSERT_STATUS(cml_executable_execute(exe, inputs, 2, NULL, 0, outs), CML_STATUS_INVALID_ARGUMENT,
                "input 1 (parameter #0 \"x\" of device slot 1)", "expected shape (Float32)[2]",
                "the shard of the logical (Float32)[4] split by", "S(data)", "got (Float32)[4]");
  cml_buffer_deinit_base(&bufs[0]);
  cml_buffer_deinit_base(&bufs[1]);
  cml_executable_release(exe);
  cml_builder_destroy(b);
  cml_mesh_destroy(m);
  cml_backend_release(&fb->base);
}

TEST(distribution_names) {
  ASSERT_STREQ(cml_distribution_name(CML_DISTRIBUTION_NONE), "None");
  ASSERT_STREQ(cml_distribution_name(CML_DISTRIBUTION_SPMD), "SPMD");
  ASSERT_STREQ(cml_distribution_name(CML_DISTRIBUTION_AUTO_SHARDING), "AutoSharding");
  ASSERT_STREQ(cml_distribution_name((cml_distribution_t)7), "unknown");
  ASSERT_EQ_INT(cml_executable_distribution(NULL), CML_DISTRIBUTION_NONE);
  ASSERT_EQ_INT(cml_executable_num_devices(NULL), 1);
}

TEST_MAIN(TEST_ENTRY(mesh_create_and_accessors), TEST_ENTRY(mesh_create_errors),
          TEST_ENTRY(replica_groups_gomlx_examples), TEST_ENTRY(sharding_specs),
          TEST_ENTRY(spmd_builder_and_module_fields), TEST_ENTRY(spmd_backend_refusals),
          TEST_ENTRY(collective_shapes_and_attrs), TEST_ENTRY(collective_bad_groups),
          TEST_ENTRY(collective_bad_shapes_and_pairs), TEST_ENTRY(collective_without_spmd),
          TEST_ENTRY(collective_backend_without_op),
          TEST_ENTRY(auto_sharding_builder_and_executable_shapes), TEST_ENTRY(auto_sharding_errors),
          TEST_ENTRY(auto_sharding_input_placement), TEST_ENTRY(distribution_names))
