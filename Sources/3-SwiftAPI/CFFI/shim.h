#ifndef CHAOSKIT_CFFI_SHIM_H
#define CHAOSKIT_CFFI_SHIM_H

#if __has_include(<ffi.h>)
#include <ffi.h>
#elif __has_include(<ffi/ffi.h>)
#include <ffi/ffi.h>
#else
#error "libffi headers not found: install libffi-dev (apt) or libffi (brew)"
#endif

#include <stddef.h>

// Swift 6 rejects libffi's `ffi_type_*` globals as shared mutable state; these
// accessors hand out their addresses instead. libffi never mutates the scalar types.
static inline ffi_type *chaos_ffi_type_void(void) { return &ffi_type_void; }
static inline ffi_type *chaos_ffi_type_uint8(void) { return &ffi_type_uint8; }
static inline ffi_type *chaos_ffi_type_sint8(void) { return &ffi_type_sint8; }
static inline ffi_type *chaos_ffi_type_uint16(void) { return &ffi_type_uint16; }
static inline ffi_type *chaos_ffi_type_sint16(void) { return &ffi_type_sint16; }
static inline ffi_type *chaos_ffi_type_uint32(void) { return &ffi_type_uint32; }
static inline ffi_type *chaos_ffi_type_sint32(void) { return &ffi_type_sint32; }
static inline ffi_type *chaos_ffi_type_uint64(void) { return &ffi_type_uint64; }
static inline ffi_type *chaos_ffi_type_sint64(void) { return &ffi_type_sint64; }
static inline ffi_type *chaos_ffi_type_float(void) { return &ffi_type_float; }
static inline ffi_type *chaos_ffi_type_double(void) { return &ffi_type_double; }
static inline ffi_type *chaos_ffi_type_pointer(void) { return &ffi_type_pointer; }

static inline ffi_abi chaos_ffi_default_abi(void) { return FFI_DEFAULT_ABI; }
static inline unsigned short chaos_ffi_type_struct_tag(void) { return FFI_TYPE_STRUCT; }
static inline size_t chaos_ffi_closure_size(void) { return sizeof(ffi_closure); }
static inline size_t chaos_ffi_arg_size(void) { return sizeof(ffi_arg); }

#endif
