// Where there is no ELF loader to ask (macOS, iOS): nothing is found, and a slot is written
// only when it is already writable (callback tables are).
#include "CChaosELF.h"

#include <errno.h>
#include <stdint.h>

#if !defined(__linux__)

int chaos_elf_find_slots(const char *symbol, chaos_elf_image_fn on_image, chaos_elf_slot_fn on_slot, void *context) {
    (void)symbol;
    (void)on_image;
    (void)on_slot;
    (void)context;
    return ENOSYS;
}
int chaos_elf_find_slots_many(const char *const *symbols, size_t count, chaos_elf_image_fn on_image,
                              chaos_elf_slot_many_fn on_slot, void *context) {
    (void)symbols;
    (void)count;
    (void)on_image;
    (void)on_slot;
    (void)context;
    return ENOSYS;
}
// Without /proc/self/maps the slot must already be writable (callback tables are).
int chaos_elf_write_slot(void **slot, void *value, void **previous) {
    if (slot == 0 || ((uintptr_t)slot % sizeof(void *)) != 0) return EINVAL;
    void *old = __atomic_exchange_n(slot, value, __ATOMIC_SEQ_CST);
    if (previous) *previous = old;
    return 0;
}
int chaos_elf_write_slots(chaos_elf_write *writes, size_t count) {
    int failed = 0;
    for (size_t i = 0; writes && i < count; i++) {
        writes[i].result = chaos_elf_write_slot(writes[i].slot, writes[i].value, &writes[i].previous);
        failed += writes[i].result != 0;
    }
    return failed;
}
void *chaos_elf_read_slot(void *const *slot) { return __atomic_load_n(slot, __ATOMIC_ACQUIRE); }
int chaos_elf_protection(const void *address) {
    (void)address;
    return -1;
}
void chaos_elf_use_maps_text(int always) { (void)always; }
void *chaos_elf_dlsym_default(const char *name) {
    (void)name;
    return 0;
}
const char *chaos_elf_describe_address(const void *address, const char **image_path) {
    (void)address;
    if (image_path) *image_path = 0;
    return 0;
}

#endif
