// What the two halves of CChaosELF share: finding slots (elf_find.c) and writing them
// (elf_write.c). Private to this target.
#ifndef CCHAOS_ELF_INTERNAL_H
#define CCHAOS_ELF_INTERNAL_H

#if defined(__linux__)
#include <link.h>

/// dl_iterate_phdr's counters of images loaded and unloaded so far, which every image's
/// info carries (0 and 0 with an older libc); whether it has them.
int cx_image_counters(const struct dl_phdr_info *info, size_t size, unsigned long long *adds, unsigned long long *subs)
    __attribute__((visibility("hidden")));
#endif

#endif
