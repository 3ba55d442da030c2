// Finding and writing GOT slots of loaded ELF images. Kept deliberately small:
// which slots to patch, ownership and error messages are decided in Swift.
#define _GNU_SOURCE 1
#include "CChaosELF.h"

#include <errno.h>

#if defined(__linux__)
#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define CHAOS_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define CHAOS_R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define CHAOS_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define CHAOS_R_GLOB_DAT R_AARCH64_GLOB_DAT
#elif defined(__i386__)
#define CHAOS_R_JUMP_SLOT R_386_JMP_SLOT
#define CHAOS_R_GLOB_DAT R_386_GLOB_DAT
#endif

#if defined(__LP64__)
#define CHAOS_R_SYM(i) ELF64_R_SYM(i)
#define CHAOS_R_TYPE(i) ELF64_R_TYPE(i)
#else
#define CHAOS_R_SYM(i) ELF32_R_SYM(i)
#define CHAOS_R_TYPE(i) ELF32_R_TYPE(i)
#endif

typedef struct scan_context {
    const char *symbol;
    chaos_elf_image_fn on_image;
    chaos_elf_slot_fn on_slot;
    void *context;
} scan_context;

// glibc relocates most d_ptr entries in place; a read-only dynamic section (vDSO,
// some targets) keeps them as link-time addresses. Accept both.
static uintptr_t dyn_address(uintptr_t base, uintptr_t value) {
    return (value < base) ? value + base : value;
}

static int value_in_image(const struct dl_phdr_info *info, uintptr_t value) {
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (value >= start && value < start + ph->p_memsz) return (ph->p_flags & PF_X) ? 2 : 1;
    }
    return 0;
}

// Whether `value` looks like the lazy-binding PLT entry a JUMP_SLOT holds before its
// first call: executable code of the same image starting the way PLT stubs start.
static int looks_like_plt_stub(const struct dl_phdr_info *info, uintptr_t value) {
    if (value_in_image(info, value) != 2) return 0;
    const unsigned char *code = (const unsigned char *)value;
#if defined(__x86_64__) || defined(__i386__)
    // push $index (68 imm32), optionally preceded by endbr64/endbr32 (f3 0f 1e fa/fb).
    if (code[0] == 0x68) return 1;
    if (code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && (code[3] == 0xfa || code[3] == 0xfb) && code[4] == 0x68) return 1;
    return 0;
#elif defined(__aarch64__)
    // Lazy slots point at PLT0: stp x16, x30, [sp, #-16]! (optionally after bti c).
    uint32_t first, second;
    memcpy(&first, code, 4);
    memcpy(&second, code + 4, 4);
    return first == 0xa9bf7bf0u || (first == 0xd503245fu && second == 0xa9bf7bf0u);
#else
    (void)code;
    return 1;
#endif
}

static void report(const struct dl_phdr_info *info, const char *path, scan_context *scan,
                   uintptr_t offset, int kind) {
    chaos_elf_slot_info slot;
    slot.slot = (void **)(info->dlpi_addr + offset);
    slot.image_path = path;
    slot.image_base = info->dlpi_addr;
    slot.kind = kind;
    slot.value_is_plt_stub = kind == CHAOS_ELF_SLOT_JUMP &&
        looks_like_plt_stub(info, (uintptr_t)chaos_elf_read_slot(slot.slot));
    scan->on_slot(scan->context, &slot);
}

static int symbol_matches(const ElfW(Sym) *symtab, const char *strtab, size_t strsz,
                          size_t index, const char *name) {
    ElfW(Word) at = symtab[index].st_name;
    if (strsz && at >= strsz) return 0;
    return strcmp(strtab + at, name) == 0;
}

static int visit_image(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    scan_context *scan = data;
    char exe[PATH_MAX];
    const char *path = info->dlpi_name;
    if (path == NULL || path[0] == '\0') {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) { exe[n] = '\0'; path = exe; } else { path = "<main program>"; }
    }
    if (scan->on_image && !scan->on_image(scan->context, path, info->dlpi_addr)) return 0;

    const ElfW(Dyn) *dyn = NULL;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
            break;
        }
    }
    if (dyn == NULL) return 0;

    uintptr_t base = info->dlpi_addr;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    size_t strsz = 0, pltrelsz = 0, relasz = 0, relsz = 0;
    size_t relaent = sizeof(ElfW(Rela)), relent = sizeof(ElfW(Rel));
    uintptr_t jmprel = 0, rela = 0, rel = 0;
    long pltrel = DT_RELA;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_address(base, dyn->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const char *)dyn_address(base, dyn->d_un.d_ptr); break;
        case DT_STRSZ: strsz = dyn->d_un.d_val; break;
        case DT_JMPREL: jmprel = dyn_address(base, dyn->d_un.d_ptr); break;
        case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
        case DT_PLTREL: pltrel = (long)dyn->d_un.d_val; break;
        case DT_RELA: rela = dyn_address(base, dyn->d_un.d_ptr); break;
        case DT_RELASZ: relasz = dyn->d_un.d_val; break;
        case DT_RELAENT: relaent = dyn->d_un.d_val; break;
        case DT_REL: rel = dyn_address(base, dyn->d_un.d_ptr); break;
        case DT_RELSZ: relsz = dyn->d_un.d_val; break;
        case DT_RELENT: relent = dyn->d_un.d_val; break;
        default: break;
        }
    }
    if (symtab == NULL || strtab == NULL) return 0;

#if defined(CHAOS_R_JUMP_SLOT)
    // PLT relocations (JUMP_SLOT), then the general table (GLOB_DAT). Overlapping
    // ranges are possible; Swift de-duplicates by slot address.
    if (jmprel && pltrelsz) {
        if (pltrel == DT_RELA) {
            for (size_t at = 0; at + sizeof(ElfW(Rela)) <= pltrelsz; at += sizeof(ElfW(Rela))) {
                const ElfW(Rela) *r = (const ElfW(Rela) *)(jmprel + at);
                if (CHAOS_R_TYPE(r->r_info) != CHAOS_R_JUMP_SLOT) continue;
                if (!symbol_matches(symtab, strtab, strsz, CHAOS_R_SYM(r->r_info), scan->symbol)) continue;
                report(info, path, scan, r->r_offset, CHAOS_ELF_SLOT_JUMP);
            }
        } else {
            for (size_t at = 0; at + sizeof(ElfW(Rel)) <= pltrelsz; at += sizeof(ElfW(Rel))) {
                const ElfW(Rel) *r = (const ElfW(Rel) *)(jmprel + at);
                if (CHAOS_R_TYPE(r->r_info) != CHAOS_R_JUMP_SLOT) continue;
                if (!symbol_matches(symtab, strtab, strsz, CHAOS_R_SYM(r->r_info), scan->symbol)) continue;
                report(info, path, scan, r->r_offset, CHAOS_ELF_SLOT_JUMP);
            }
        }
    }
    if (rela && relasz && relaent) {
        for (size_t at = 0; at + relaent <= relasz; at += relaent) {
            const ElfW(Rela) *r = (const ElfW(Rela) *)(rela + at);
            unsigned long type = CHAOS_R_TYPE(r->r_info);
            if (type != CHAOS_R_GLOB_DAT && type != CHAOS_R_JUMP_SLOT) continue;
            if (!symbol_matches(symtab, strtab, strsz, CHAOS_R_SYM(r->r_info), scan->symbol)) continue;
            report(info, path, scan, r->r_offset,
                   type == CHAOS_R_GLOB_DAT ? CHAOS_ELF_SLOT_GLOB_DAT : CHAOS_ELF_SLOT_JUMP);
        }
    }
    if (rel && relsz && relent) {
        for (size_t at = 0; at + relent <= relsz; at += relent) {
            const ElfW(Rel) *r = (const ElfW(Rel) *)(rel + at);
            unsigned long type = CHAOS_R_TYPE(r->r_info);
            if (type != CHAOS_R_GLOB_DAT && type != CHAOS_R_JUMP_SLOT) continue;
            if (!symbol_matches(symtab, strtab, strsz, CHAOS_R_SYM(r->r_info), scan->symbol)) continue;
            report(info, path, scan, r->r_offset,
                   type == CHAOS_R_GLOB_DAT ? CHAOS_ELF_SLOT_GLOB_DAT : CHAOS_ELF_SLOT_JUMP);
        }
    }
#else
    (void)report; (void)jmprel; (void)pltrelsz; (void)pltrel; (void)rela; (void)relasz;
    (void)relaent; (void)rel; (void)relsz; (void)relent; (void)strsz;
#endif
    return 0;
}

int chaos_elf_find_slots(const char *symbol, chaos_elf_image_fn on_image,
                         chaos_elf_slot_fn on_slot, void *context) {
    if (symbol == NULL || on_slot == NULL) return EINVAL;
    scan_context scan = { symbol, on_image, on_slot, context };
    dl_iterate_phdr(visit_image, &scan);
    return 0;
}

int chaos_elf_protection(const void *address) {
    FILE *maps = fopen("/proc/self/maps", "re");
    if (maps == NULL) return -1;
    uintptr_t target = (uintptr_t)address;
    char line[512];
    int result = -1;
    int at_line_start = 1;
    while (fgets(line, sizeof line, maps) != NULL) {
        int starts = at_line_start;
        at_line_start = strchr(line, '\n') != NULL; // long lines come in pieces
        if (!starts) continue;
        unsigned long long start = 0, end = 0;
        char perms[8] = {0};
        if (sscanf(line, "%llx-%llx %7s", &start, &end, perms) != 3) continue;
        if (target < start || target >= end) continue;
        result = PROT_NONE;
        if (perms[0] == 'r') result |= PROT_READ;
        if (perms[1] == 'w') result |= PROT_WRITE;
        if (perms[2] == 'x') result |= PROT_EXEC;
        break;
    }
    fclose(maps);
    return result;
}

static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

int chaos_elf_write_slot(void **slot, void *value, void **previous) {
    if (slot == NULL || ((uintptr_t)slot % sizeof(void *)) != 0) return EINVAL;
    pthread_mutex_lock(&write_lock);
    int result = 0;
    int protection = chaos_elf_protection(slot);
    if (protection < 0) {
        result = ENOENT;
    } else {
        uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
        void *page = (void *)((uintptr_t)slot & ~(page_size - 1));
        int needs_unlock = !(protection & PROT_WRITE);
        if (needs_unlock && mprotect(page, page_size, protection | PROT_WRITE) != 0) {
            result = errno;
        } else {
            void *old = __atomic_exchange_n(slot, value, __ATOMIC_SEQ_CST);
            if (needs_unlock && mprotect(page, page_size, protection) != 0) {
                result = errno;
                __atomic_store_n(slot, old, __ATOMIC_SEQ_CST); // still writable: undo
            } else if (previous) {
                *previous = old;
            }
        }
    }
    pthread_mutex_unlock(&write_lock);
    return result;
}

void *chaos_elf_read_slot(void *const *slot) {
    return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
}

void *chaos_elf_dlsym_default(const char *name) { return dlsym(RTLD_DEFAULT, name); }

const char *chaos_elf_describe_address(const void *address, const char **image_path) {
    Dl_info info;
    memset(&info, 0, sizeof info);
    if (dladdr(address, &info) == 0) {
        if (image_path) *image_path = NULL;
        return NULL;
    }
    if (image_path) *image_path = info.dli_fname;
    return info.dli_saddr == address ? info.dli_sname : NULL;
}

#else // !__linux__

int chaos_elf_find_slots(const char *symbol, chaos_elf_image_fn on_image,
                         chaos_elf_slot_fn on_slot, void *context) {
    (void)symbol; (void)on_image; (void)on_slot; (void)context;
    return ENOSYS;
}
// Without /proc/self/maps the slot must already be writable (callback tables are).
int chaos_elf_write_slot(void **slot, void *value, void **previous) {
    if (slot == 0 || ((uintptr_t)slot % sizeof(void *)) != 0) return EINVAL;
    void *old = __atomic_exchange_n(slot, value, __ATOMIC_SEQ_CST);
    if (previous) *previous = old;
    return 0;
}
void *chaos_elf_read_slot(void *const *slot) { return __atomic_load_n(slot, __ATOMIC_ACQUIRE); }
int chaos_elf_protection(const void *address) { (void)address; return -1; }
void *chaos_elf_dlsym_default(const char *name) { (void)name; return 0; }
const char *chaos_elf_describe_address(const void *address, const char **image_path) {
    (void)address;
    if (image_path) *image_path = 0;
    return 0;
}

#endif
