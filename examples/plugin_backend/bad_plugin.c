// SPDX-License-Identifier: Apache-2.0
// examples/plugin_backend/bad_plugin.c: broken plug-ins, for the tests of cml_plugin_load's errors.
//
// Built several times, once per REF_BAD_PLUGIN_KIND, each a MODULE library that a correct host
// must refuse with a clear status (and without crashing):
//   REF_BAD_PLUGIN_WRONG_MAJOR   the factory says api_major = CML_BACKEND_API_MAJOR + 1
//   REF_BAD_PLUGIN_NEWER_MINOR   the factory needs a minor version the host does not have
//   REF_BAD_PLUGIN_NULL_FACTORY  cml_plugin_query returns NULL
//   REF_BAD_PLUGIN_NO_SYMBOL     the library does not export cml_plugin_query at all
//   REF_BAD_PLUGIN_SELF_REGISTER the library registers its factory itself when loaded (a
//                                constructor), and cml_plugin_query returns that factory too
//   REF_BAD_PLUGIN_SELF_ORPHAN   the same, but cml_plugin_query returns NULL
// None of them is a usable backend: `create` of the first four is never reached; the two
// self-registering ones answer UNAVAILABLE "create reached" (their code must stay loaded).
#include "cml/backend_impl.h"

#define REF_BAD_PLUGIN_WRONG_MAJOR 1
#define REF_BAD_PLUGIN_NEWER_MINOR 2
#define REF_BAD_PLUGIN_NULL_FACTORY 3
#define REF_BAD_PLUGIN_NO_SYMBOL 4
#define REF_BAD_PLUGIN_SELF_REGISTER 5
#define REF_BAD_PLUGIN_SELF_ORPHAN 6

#ifndef REF_BAD_PLUGIN_KIND
#error "define REF_BAD_PLUGIN_KIND"
#endif

#if REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_NO_SYMBOL

// Something is exported, but not the query function.
CML_API int cml_plugin_not_the_query(void);
int cml_plugin_not_the_query(void) { return 0; }

#else

CML_API const cml_backend_factory_t* cml_plugin_query(uint32_t host_api_major);

#if REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_WRONG_MAJOR || \
    REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_NEWER_MINOR
static cml_status_t bad_create(const char* config, cml_allocator_t allocator,
                               cml_backend_t** out_backend) {
  *out_backend = NULL;
  return cml_status_make(CML_STATUS_INTERNAL, "bad plug-in: create must never be called");
}
#endif

#if REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_SELF_REGISTER || \
    REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_SELF_ORPHAN
static cml_status_t self_create(const char* config, cml_allocator_t allocator,
                                cml_backend_t** out_backend) {
  (void)config;
  (void)allocator;
  *out_backend = NULL;
  return cml_status_make(CML_STATUS_UNAVAILABLE, "self-registered plug-in: create reached");
}

static const cml_backend_factory_t bad_factory = {
    .struct_size = sizeof(cml_backend_factory_t),
    .api_major = CML_BACKEND_API_MAJOR,
    .api_minor = CML_BACKEND_API_MINOR,
#if REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_SELF_REGISTER
    .name = "self_registered",
#else
    .name = "self_orphan",
#endif
    .description = "a plug-in that registers itself when loaded",
    .create = self_create,
};

__attribute__((constructor)) static void self_register(void) {
  cml_status_free(cml_backend_register(&bad_factory));
}
#elif REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_WRONG_MAJOR
static const cml_backend_factory_t bad_factory = {
    .struct_size = sizeof(cml_backend_factory_t),
    .api_major = CML_BACKEND_API_MAJOR + 1,
    .api_minor = 0,
    .name = "bad_major",
    .description = "a plug-in built for a future backend API",
    .create = bad_create,
};
#elif REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_NEWER_MINOR
static const cml_backend_factory_t bad_factory = {
    .struct_size = sizeof(cml_backend_factory_t),
    .api_major = CML_BACKEND_API_MAJOR,
    .api_minor = CML_BACKEND_API_MINOR + 1,
    .name = "bad_minor",
    .description = "a plug-in that needs a newer minor version of the backend API",
    .create = bad_create,
};
#endif

const cml_backend_factory_t* cml_plugin_query(uint32_t host_api_major) {
#if REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_NULL_FACTORY || \
    REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_SELF_ORPHAN
  return NULL;
#else
  // Deliberately ignores |host_api_major|, so the host's own check is what refuses it.
  return &bad_factory;
#endif
}

#endif
