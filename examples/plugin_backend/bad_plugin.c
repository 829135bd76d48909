// SPDX-License-Identifier: Apache-2.0
// examples/plugin_backend/bad_plugin.c: broken plug-ins, for the tests of cml_plugin_load's errors.
//
// Built several times, once per REF_BAD_PLUGIN_KIND, each a MODULE library that a correct host
// must refuse with a clear status (and without crashing):
//   REF_BAD_PLUGIN_WRONG_MAJOR   the factory says api_major = CML_BACKEND_API_MAJOR + 1
//   REF_BAD_PLUGIN_NEWER_MINOR   the factory needs a minor version the host does not have
//   REF_BAD_PLUGIN_NULL_FACTORY  cml_plugin_query returns NULL
//   REF_BAD_PLUGIN_NO_SYMBOL     the library does not export cml_plugin_query at all
// None of them is a usable backend: `create` is never reached.
#include "cml/backend_impl.h"

#define REF_BAD_PLUGIN_WRONG_MAJOR 1
#define REF_BAD_PLUGIN_NEWER_MINOR 2
#define REF_BAD_PLUGIN_NULL_FACTORY 3
#define REF_BAD_PLUGIN_NO_SYMBOL 4

#ifndef REF_BAD_PLUGIN_KIND
#error "define REF_BAD_PLUGIN_KIND"
#endif

#if REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_NO_SYMBOL

// Something is exported, but not the query function.
CML_API int cml_plugin_not_the_query(void);
int cml_plugin_not_the_query(void) { return 0; }

#else

CML_API const cml_backend_factory_t* cml_plugin_query(uint32_t host_api_major);

#if REF_BAD_PLUGIN_KIND != REF_BAD_PLUGIN_NULL_FACTORY
static cml_status_t bad_create(const char* config, cml_allocator_t allocator,
                               cml_backend_t** out_backend) {
  *out_backend = NULL;
  return cml_status_make(CML_STATUS_INTERNAL, "bad plug-in: create must never be called");
}
#endif

#if REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_WRONG_MAJOR
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
#if REF_BAD_PLUGIN_KIND == REF_BAD_PLUGIN_NULL_FACTORY
  return NULL;
#else
  // Deliberately ignores |host_api_major|, so the host's own check is what refuses it.
  return &bad_factory;
#endif
}

#endif
