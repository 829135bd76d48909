// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/pjrt/pjrt_abi.h: cml's own declarations of the subset of the PJRT C ABI it
// uses, written from the documented layout (docs/xla.md and the ABI facts it cites), not copied.
//
// Rules the declarations follow:
// - Every argument struct starts with `struct_size` and `extension_start`; we zero the struct,
//   set `struct_size` to sizeof() of our (newest known, PJRT 0.112) layout and leave
//   `extension_start` NULL. Plugins accept structs at least as large as they expect.
// - The API table is read by slot index: slot i sits at byte offset 40 + 8*i. A slot is used
//   only when the plugin's `struct_size` covers it and the pointer is non-NULL.
// - Layouts are checked below with _Static_assert against the byte offsets the ABI fixes
//   (LP64 only: the backend builds on 64-bit Linux and macOS).
//
// Thread-safety: declarations only.
#ifndef CML_BACKENDS_XLA_PJRT_PJRT_ABI_H_
#define CML_BACKENDS_XLA_PJRT_PJRT_ABI_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Opaque plugin objects.
typedef struct cml_pjrt_error_t cml_pjrt_error_t;
typedef struct cml_pjrt_client_t cml_pjrt_client_t;
typedef struct cml_pjrt_device_t cml_pjrt_device_t;
typedef struct cml_pjrt_device_description_t cml_pjrt_device_description_t;
typedef struct cml_pjrt_memory_t cml_pjrt_memory_t;
typedef struct cml_pjrt_buffer_t cml_pjrt_buffer_t;
typedef struct cml_pjrt_event_t cml_pjrt_event_t;
typedef struct cml_pjrt_executable_t cml_pjrt_executable_t;
typedef struct cml_pjrt_loaded_executable_t cml_pjrt_loaded_executable_t;

// Every API function takes one argument struct and returns an error (NULL = OK), except
// Error_Destroy and Error_Message, which return nothing.
typedef cml_pjrt_error_t* (*cml_pjrt_fn)(void* args);

// The header of every argument struct.
#define CML_PJRT_ARGS_HEADER \
  size_t struct_size;        \
  void* extension_start

//===--- the API table ---===//

typedef struct cml_pjrt_api_version_t {
  CML_PJRT_ARGS_HEADER;
  int major_version;
  int minor_version;
} cml_pjrt_api_version_t;

// Slot indices (names as the ABI spells them, with a CML_PJRT_SLOT_ prefix). Only the slots
// cml calls are listed; the numbering is fixed from PJRT 0.57 on.
typedef enum cml_pjrt_slot_t {
  CML_PJRT_SLOT_ERROR_DESTROY = 0,
  CML_PJRT_SLOT_ERROR_MESSAGE = 1,
  CML_PJRT_SLOT_ERROR_GET_CODE = 2,
  CML_PJRT_SLOT_PLUGIN_INITIALIZE = 3,
  CML_PJRT_SLOT_PLUGIN_ATTRIBUTES = 4,
  CML_PJRT_SLOT_EVENT_DESTROY = 5,
  CML_PJRT_SLOT_EVENT_AWAIT = 8,
  CML_PJRT_SLOT_CLIENT_CREATE = 10,
  CML_PJRT_SLOT_CLIENT_DESTROY = 11,
  CML_PJRT_SLOT_CLIENT_PLATFORM_NAME = 12,
  CML_PJRT_SLOT_CLIENT_PROCESS_INDEX = 13,
  CML_PJRT_SLOT_CLIENT_PLATFORM_VERSION = 14,
  CML_PJRT_SLOT_CLIENT_DEVICES = 15,
  CML_PJRT_SLOT_CLIENT_ADDRESSABLE_DEVICES = 16,
  CML_PJRT_SLOT_CLIENT_COMPILE = 20,
  CML_PJRT_SLOT_CLIENT_BUFFER_FROM_HOST_BUFFER = 22,
  CML_PJRT_SLOT_DEVICE_DESCRIPTION_ID = 23,
  CML_PJRT_SLOT_DEVICE_DESCRIPTION_PROCESS_INDEX = 24,
  CML_PJRT_SLOT_DEVICE_DESCRIPTION_KIND = 26,
  CML_PJRT_SLOT_DEVICE_DESCRIPTION_TO_STRING = 28,
  CML_PJRT_SLOT_DEVICE_GET_DESCRIPTION = 29,
  CML_PJRT_SLOT_DEVICE_IS_ADDRESSABLE = 30,
  CML_PJRT_SLOT_EXECUTABLE_DESTROY = 40,
  CML_PJRT_SLOT_EXECUTABLE_NUM_OUTPUTS = 44,
  CML_PJRT_SLOT_LOADED_EXECUTABLE_DESTROY = 50,
  CML_PJRT_SLOT_LOADED_EXECUTABLE_GET_EXECUTABLE = 51,
  CML_PJRT_SLOT_LOADED_EXECUTABLE_EXECUTE = 55,
  CML_PJRT_SLOT_BUFFER_DESTROY = 58,
  CML_PJRT_SLOT_BUFFER_COPY_TO_DEVICE = 69,
  CML_PJRT_SLOT_BUFFER_TO_HOST_BUFFER = 70,
  CML_PJRT_SLOT_BUFFER_READY_EVENT = 72,
  CML_PJRT_SLOT_CLIENT_CREATE_VIEW_OF_DEVICE_BUFFER = 93,
  CML_PJRT_SLOT_COUNT_0_112 = 138,  // slots in a PJRT 0.112 table
} cml_pjrt_slot_t;

typedef struct cml_pjrt_api_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_api_version_t pjrt_api_version;
  cml_pjrt_fn slots[CML_PJRT_SLOT_COUNT_0_112];
} cml_pjrt_api_t;

// The oldest minor version whose table order cml understands.
#define CML_PJRT_MIN_MINOR 57
// The first minor version whose Client_Create takes the key-value try-get callback.
#define CML_PJRT_KV_TRY_GET_MINOR 61
#define CML_PJRT_GET_API_SYMBOL "GetPjrtApi"
typedef const cml_pjrt_api_t* (*cml_pjrt_get_api_fn)(void);

//===--- enums ---===//

// PJRT_Error_Code (absl codes).
enum {
  CML_PJRT_CODE_OK = 0,
  CML_PJRT_CODE_CANCELLED = 1,
  CML_PJRT_CODE_UNKNOWN = 2,
  CML_PJRT_CODE_INVALID_ARGUMENT = 3,
  CML_PJRT_CODE_DEADLINE_EXCEEDED = 4,
  CML_PJRT_CODE_NOT_FOUND = 5,
  CML_PJRT_CODE_ALREADY_EXISTS = 6,
  CML_PJRT_CODE_PERMISSION_DENIED = 7,
  CML_PJRT_CODE_RESOURCE_EXHAUSTED = 8,
  CML_PJRT_CODE_FAILED_PRECONDITION = 9,
  CML_PJRT_CODE_ABORTED = 10,
  CML_PJRT_CODE_OUT_OF_RANGE = 11,
  CML_PJRT_CODE_UNIMPLEMENTED = 12,
  CML_PJRT_CODE_INTERNAL = 13,
  CML_PJRT_CODE_UNAVAILABLE = 14,
  CML_PJRT_CODE_DATA_LOSS = 15,
  CML_PJRT_CODE_UNAUTHENTICATED = 16,
};

// PJRT_NamedValue_Type.
enum {
  CML_PJRT_NAMED_STRING = 0,
  CML_PJRT_NAMED_INT64 = 1,
  CML_PJRT_NAMED_INT64_LIST = 2,
  CML_PJRT_NAMED_FLOAT = 3,
  CML_PJRT_NAMED_BOOL = 4,
};

// PJRT_HostBufferSemantics.
enum {
  CML_PJRT_HOST_IMMUTABLE_ONLY_DURING_CALL = 0,
  CML_PJRT_HOST_IMMUTABLE_UNTIL_TRANSFER_COMPLETES = 1,
  CML_PJRT_HOST_IMMUTABLE_ZERO_COPY = 2,
  CML_PJRT_HOST_MUTABLE_ZERO_COPY = 3,
};

// PJRT_Buffer_MemoryLayout_Type.
enum { CML_PJRT_LAYOUT_TILED = 0, CML_PJRT_LAYOUT_STRIDES = 1 };

// PJRT_Buffer_Type values equal cml_dtype_t for the dtypes cml uses (see cml/shape.h).

//===--- argument structs ---===//

typedef struct cml_pjrt_named_value_t {
  CML_PJRT_ARGS_HEADER;
  const char* name;
  size_t name_size;
  int type;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_array_value;
    float float_value;
    bool bool_value;
  } value;
  size_t value_size;
} cml_pjrt_named_value_t;

typedef struct cml_pjrt_error_destroy_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_error_t* error;
} cml_pjrt_error_destroy_args_t;

typedef struct cml_pjrt_error_message_args_t {
  CML_PJRT_ARGS_HEADER;
  const cml_pjrt_error_t* error;
  const char* message;  // out, not NUL-terminated, lives with the error
  size_t message_size;  // out
} cml_pjrt_error_message_args_t;

typedef struct cml_pjrt_error_get_code_args_t {
  CML_PJRT_ARGS_HEADER;
  const cml_pjrt_error_t* error;
  int code;  // out
} cml_pjrt_error_get_code_args_t;

typedef struct cml_pjrt_plugin_initialize_args_t {
  CML_PJRT_ARGS_HEADER;
} cml_pjrt_plugin_initialize_args_t;

typedef struct cml_pjrt_plugin_attributes_args_t {
  CML_PJRT_ARGS_HEADER;
  const cml_pjrt_named_value_t* attributes;  // out, live for the process
  size_t num_attributes;                     // out
} cml_pjrt_plugin_attributes_args_t;

typedef struct cml_pjrt_event_args_t {  // Event_Destroy, Event_Await
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_event_t* event;
} cml_pjrt_event_args_t;

// The key-value store a multi-process client uses (the host program serves it; the plugin calls
// the callbacks from any of its threads, during Client_Create and later). A callback reports an
// error by returning (*args->callback_error)(code, message, size): an error the plugin creates.

// Creates a plugin error (PJRT_CallbackError); the args hold a pointer to this pointer.
typedef cml_pjrt_error_t* (*cml_pjrt_callback_error_fn)(int code, const char* message,
                                                        size_t message_size);
// Frees a value a get callback returned.
typedef void (*cml_pjrt_kv_value_deleter_fn)(char* value);

typedef struct cml_pjrt_kv_get_args_t {
  CML_PJRT_ARGS_HEADER;
  const char* key;
  size_t key_size;
  int timeout_in_ms;  // wait at most this long for the key to be put
  cml_pjrt_callback_error_fn* callback_error;
  void* user_arg;                                       // kv_get_user_arg
  char* value;                                          // out, freed with the deleter
  size_t value_size;                                    // out
  cml_pjrt_kv_value_deleter_fn value_deleter_callback;  // out
} cml_pjrt_kv_get_args_t;

typedef struct cml_pjrt_kv_try_get_args_t {  // a get that does not wait: NOT_FOUND at once
  CML_PJRT_ARGS_HEADER;
  const char* key;
  size_t key_size;
  cml_pjrt_callback_error_fn* callback_error;
  void* user_arg;  // kv_try_get_user_arg
  char* value;     // out
  size_t value_size;
  cml_pjrt_kv_value_deleter_fn value_deleter_callback;  // out
} cml_pjrt_kv_try_get_args_t;

typedef struct cml_pjrt_kv_put_args_t {
  CML_PJRT_ARGS_HEADER;
  const char* key;
  size_t key_size;
  const char* value;
  size_t value_size;
  cml_pjrt_callback_error_fn* callback_error;
  void* user_arg;  // kv_put_user_arg
} cml_pjrt_kv_put_args_t;

typedef cml_pjrt_error_t* (*cml_pjrt_kv_get_fn)(cml_pjrt_kv_get_args_t* args);
typedef cml_pjrt_error_t* (*cml_pjrt_kv_try_get_fn)(cml_pjrt_kv_try_get_args_t* args);
typedef cml_pjrt_error_t* (*cml_pjrt_kv_put_fn)(cml_pjrt_kv_put_args_t* args);

typedef struct cml_pjrt_client_create_args_t {
  CML_PJRT_ARGS_HEADER;
  const cml_pjrt_named_value_t* create_options;
  size_t num_options;
  cml_pjrt_kv_get_fn kv_get_callback;
  void* kv_get_user_arg;
  cml_pjrt_kv_put_fn kv_put_callback;
  void* kv_put_user_arg;
  cml_pjrt_client_t* client;                   // out
  cml_pjrt_kv_try_get_fn kv_try_get_callback;  // PJRT 0.61 on
  void* kv_try_get_user_arg;
} cml_pjrt_client_create_args_t;

typedef struct cml_pjrt_client_process_index_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_client_t* client;
  int process_index;  // out
} cml_pjrt_client_process_index_args_t;

typedef struct cml_pjrt_client_args_t {  // Client_Destroy
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_client_t* client;
} cml_pjrt_client_args_t;

typedef struct cml_pjrt_client_string_args_t {  // Client_PlatformName / _PlatformVersion
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_client_t* client;
  const char* str;  // out, owned by the client
  size_t size;      // out
} cml_pjrt_client_string_args_t;

typedef struct cml_pjrt_client_devices_args_t {  // Client_Devices, Client_AddressableDevices
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_client_t* client;
  cml_pjrt_device_t* const* devices;  // out, owned by the client
  size_t num_devices;                 // out
} cml_pjrt_client_devices_args_t;

typedef struct cml_pjrt_device_get_description_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_device_t* device;
  cml_pjrt_device_description_t* device_description;  // out
} cml_pjrt_device_get_description_args_t;

typedef struct cml_pjrt_device_description_id_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_device_description_t* device_description;
  int id;  // out
} cml_pjrt_device_description_id_args_t;

typedef struct cml_pjrt_device_description_process_index_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_device_description_t* device_description;
  int process_index;  // out
} cml_pjrt_device_description_process_index_args_t;

typedef struct cml_pjrt_device_is_addressable_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_device_t* device;
  bool is_addressable;  // out
} cml_pjrt_device_is_addressable_args_t;

typedef struct cml_pjrt_device_description_string_args_t {  // _Kind, _ToString
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_device_description_t* device_description;
  const char* str;  // out
  size_t size;      // out
} cml_pjrt_device_description_string_args_t;

typedef struct cml_pjrt_program_t {
  CML_PJRT_ARGS_HEADER;
  const char* code;
  size_t code_size;
  const char* format;
  size_t format_size;
} cml_pjrt_program_t;

typedef struct cml_pjrt_client_compile_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_client_t* client;
  const cml_pjrt_program_t* program;
  const char* compile_options;
  size_t compile_options_size;
  cml_pjrt_loaded_executable_t* executable;  // out
} cml_pjrt_client_compile_args_t;

typedef struct cml_pjrt_loaded_executable_destroy_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_loaded_executable_t* executable;
} cml_pjrt_loaded_executable_destroy_args_t;

typedef struct cml_pjrt_loaded_executable_get_executable_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_loaded_executable_t* loaded_executable;
  cml_pjrt_executable_t* executable;  // out: a new one, for Executable_Destroy
} cml_pjrt_loaded_executable_get_executable_args_t;

typedef struct cml_pjrt_executable_num_outputs_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_executable_t* executable;
  size_t num_outputs;  // out
} cml_pjrt_executable_num_outputs_args_t;

typedef struct cml_pjrt_executable_destroy_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_executable_t* executable;
} cml_pjrt_executable_destroy_args_t;

typedef struct cml_pjrt_layout_tiled_t {
  CML_PJRT_ARGS_HEADER;
  const int64_t* minor_to_major;
  size_t minor_to_major_size;
  const int64_t* tile_dims;
  const size_t* tile_dim_sizes;
  size_t num_tiles;
} cml_pjrt_layout_tiled_t;

typedef struct cml_pjrt_layout_strides_t {
  CML_PJRT_ARGS_HEADER;
  const int64_t* byte_strides;
  size_t num_byte_strides;
} cml_pjrt_layout_strides_t;

typedef struct cml_pjrt_memory_layout_t {
  CML_PJRT_ARGS_HEADER;
  union {
    cml_pjrt_layout_tiled_t tiled;
    cml_pjrt_layout_strides_t strides;
  } u;
  int type;
} cml_pjrt_memory_layout_t;

typedef struct cml_pjrt_buffer_from_host_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_client_t* client;
  const void* data;
  int type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides;
  size_t num_byte_strides;
  int host_buffer_semantics;
  cml_pjrt_device_t* device;
  cml_pjrt_memory_t* memory;
  cml_pjrt_memory_layout_t* device_layout;
  cml_pjrt_event_t* done_with_host_buffer;  // out
  cml_pjrt_buffer_t* buffer;                // out
} cml_pjrt_buffer_from_host_args_t;

typedef struct cml_pjrt_create_view_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_client_t* client;
  void* device_buffer_ptr;
  const int64_t* dims;
  size_t num_dims;
  int element_type;
  cml_pjrt_memory_layout_t* layout;
  cml_pjrt_device_t* device;
  void (*on_delete_callback)(void* device_buffer_ptr, void* user_arg);
  void* on_delete_callback_arg;
  intptr_t stream;
  cml_pjrt_buffer_t* buffer;  // out
  cml_pjrt_memory_t* memory;
} cml_pjrt_create_view_args_t;

typedef struct cml_pjrt_buffer_args_t {  // Buffer_Destroy
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_buffer_t* buffer;
} cml_pjrt_buffer_args_t;

typedef struct cml_pjrt_buffer_copy_to_device_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_buffer_t* buffer;
  cml_pjrt_device_t* dst_device;
  cml_pjrt_buffer_t* dst_buffer;  // out
} cml_pjrt_buffer_copy_to_device_args_t;

typedef struct cml_pjrt_buffer_ready_event_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_buffer_t* buffer;
  cml_pjrt_event_t* event;  // out
} cml_pjrt_buffer_ready_event_args_t;

typedef struct cml_pjrt_buffer_to_host_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_buffer_t* src;
  cml_pjrt_memory_layout_t* host_layout;
  void* dst;
  size_t dst_size;
  cml_pjrt_event_t* event;  // out
} cml_pjrt_buffer_to_host_args_t;

typedef struct cml_pjrt_execute_options_t {
  CML_PJRT_ARGS_HEADER;
  void** send_callbacks;
  void** recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  void* context;
  const char* call_location;
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
  void* multi_slice_config;
  bool use_major_to_minor_data_layout_for_callbacks;
  void* hlo_output_callbacks;
  size_t num_hlo_output_callbacks;
} cml_pjrt_execute_options_t;

typedef struct cml_pjrt_execute_args_t {
  CML_PJRT_ARGS_HEADER;
  cml_pjrt_loaded_executable_t* executable;
  cml_pjrt_execute_options_t* options;
  cml_pjrt_buffer_t* const* const* argument_lists;
  size_t num_devices;
  size_t num_args;
  cml_pjrt_buffer_t** const* output_lists;
  cml_pjrt_event_t** device_complete_events;
  cml_pjrt_device_t* execute_device;
} cml_pjrt_execute_args_t;

//===--- layout checks (LP64) ---===//

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
_Static_assert(offsetof(cml_pjrt_api_t, slots) == 40, "PJRT_Api header is 40 bytes");
_Static_assert(offsetof(cml_pjrt_api_t, slots[CML_PJRT_SLOT_CLIENT_CREATE]) == 120,
               "PJRT_Client_Create at 120");
_Static_assert(offsetof(cml_pjrt_api_t, slots[CML_PJRT_SLOT_CLIENT_COMPILE]) == 200,
               "PJRT_Client_Compile at 200");
_Static_assert(offsetof(cml_pjrt_api_t, slots[CML_PJRT_SLOT_LOADED_EXECUTABLE_EXECUTE]) == 480,
               "PJRT_LoadedExecutable_Execute at 480");
_Static_assert(sizeof(cml_pjrt_api_t) == 1144, "PJRT_Api 0.112 is 1144 bytes");
_Static_assert(sizeof(cml_pjrt_named_value_t) == 56, "PJRT_NamedValue");
_Static_assert(offsetof(cml_pjrt_error_message_args_t, message_size) == 32, "Error_Message");
_Static_assert(sizeof(cml_pjrt_plugin_attributes_args_t) == 32, "Plugin_Attributes");
_Static_assert(sizeof(cml_pjrt_client_create_args_t) == 88, "Client_Create_Args");
_Static_assert(offsetof(cml_pjrt_client_create_args_t, client) == 64, "Client_Create client");
_Static_assert(sizeof(cml_pjrt_client_devices_args_t) == 40, "Client_AddressableDevices");
_Static_assert(offsetof(cml_pjrt_client_create_args_t, kv_try_get_callback) == 72,
               "Client_Create kv_try_get_callback");
_Static_assert(sizeof(cml_pjrt_kv_get_args_t) == 80, "KeyValueGetCallback_Args");
_Static_assert(offsetof(cml_pjrt_kv_get_args_t, callback_error) == 40, "KV get callback_error");
_Static_assert(sizeof(cml_pjrt_kv_try_get_args_t) == 72, "KeyValueTryGetCallback_Args");
_Static_assert(offsetof(cml_pjrt_kv_try_get_args_t, value) == 48, "KV try-get value");
_Static_assert(sizeof(cml_pjrt_kv_put_args_t) == 64, "KeyValuePutCallback_Args");
_Static_assert(offsetof(cml_pjrt_kv_put_args_t, callback_error) == 48, "KV put callback_error");
_Static_assert(sizeof(cml_pjrt_device_get_description_args_t) == 32, "Device_GetDescription");
_Static_assert(sizeof(cml_pjrt_program_t) == 48, "PJRT_Program");
_Static_assert(sizeof(cml_pjrt_client_compile_args_t) == 56, "Client_Compile_Args");
_Static_assert(sizeof(cml_pjrt_layout_tiled_t) == 56, "MemoryLayout_Tiled");
_Static_assert(offsetof(cml_pjrt_memory_layout_t, type) == 72, "MemoryLayout type");
_Static_assert(sizeof(cml_pjrt_memory_layout_t) == 80, "MemoryLayout");
_Static_assert(sizeof(cml_pjrt_buffer_from_host_args_t) == 120, "BufferFromHostBuffer_Args");
_Static_assert(offsetof(cml_pjrt_buffer_from_host_args_t, host_buffer_semantics) == 72,
               "BufferFromHostBuffer semantics");
_Static_assert(sizeof(cml_pjrt_create_view_args_t) == 112, "CreateViewOfDeviceBuffer_Args");
_Static_assert(offsetof(cml_pjrt_create_view_args_t, buffer) == 96, "CreateView buffer");
_Static_assert(sizeof(cml_pjrt_buffer_to_host_args_t) == 56, "Buffer_ToHostBuffer_Args");
_Static_assert(sizeof(cml_pjrt_execute_options_t) == 144, "PJRT_ExecuteOptions 0.112");
_Static_assert(offsetof(cml_pjrt_execute_options_t, non_donatable_input_indices) == 56,
               "ExecuteOptions non_donatable");
_Static_assert(offsetof(cml_pjrt_execute_options_t, multi_slice_config) == 112,
               "ExecuteOptions multi_slice_config");
_Static_assert(sizeof(cml_pjrt_execute_args_t) == 80, "LoadedExecutable_Execute_Args");
#endif

#endif  // CML_BACKENDS_XLA_PJRT_PJRT_ABI_H_
