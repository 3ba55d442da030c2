// Reading a vDSO's ELF image (vdso_elf.h). Every offset is checked against the image: the
// bytes come from another process.
#define _GNU_SOURCE
#include "vdso_elf.h"

#include <elf.h>
#include <string.h>

/// The clock symbols of the x86_64 vDSO, and the wrapper each one is redirected to.
static const struct {
    const char *name;
    int function;
} clock_symbols[] = {
    {"__vdso_clock_gettime", CHAOS_VDSO_CLOCK_GETTIME},
    {"clock_gettime", CHAOS_VDSO_CLOCK_GETTIME},
    {"__vdso_gettimeofday", CHAOS_VDSO_GETTIMEOFDAY},
    {"gettimeofday", CHAOS_VDSO_GETTIMEOFDAY},
    {"__vdso_time", CHAOS_VDSO_TIME},
    {"time", CHAOS_VDSO_TIME},
};

/// Whether [offset, offset + size) lies within `length`.
static int within(uint64_t offset, uint64_t size, size_t length) { return offset <= length && size <= length - offset; }

int chaos_vdso_parse(const unsigned char *image, size_t length, uint64_t base, struct chaos_vdso_image *out,
                     const char **why) {
    memset(out, 0, sizeof *out);
    Elf64_Ehdr header;
    if (!within(0, sizeof header, length)) return *why = "its vDSO is too short", -1;
    memcpy(&header, image, sizeof header);
    if (memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
        header.e_machine != EM_X86_64)
        return *why = "its vDSO is not an x86_64 ELF image", -1;
    // The one loadable segment: the image as mapped.
    const Elf64_Phdr *load = NULL;
    for (int i = 0; i < header.e_phnum; i++) {
        uint64_t at = header.e_phoff + (uint64_t)i * sizeof(Elf64_Phdr);
        if (header.e_phentsize != sizeof(Elf64_Phdr) || !within(at, sizeof(Elf64_Phdr), length))
            return *why = "its vDSO's program headers are not where they should be", -1;
        const Elf64_Phdr *segment = (const Elf64_Phdr *)(image + at);
        if (segment->p_type == PT_LOAD && !load) load = segment;
    }
    if (!load || load->p_offset != 0 || !(load->p_flags & PF_X))
        return *why = "its vDSO has no loadable segment at its start", -1;
    out->load_offset = base + load->p_offset - load->p_vaddr;
    // The dynamic symbols, by the section headers (a vDSO is mapped whole, headers too).
    const Elf64_Shdr *symbols = NULL, *names = NULL;
    for (int i = 0; i < header.e_shnum; i++) {
        uint64_t at = header.e_shoff + (uint64_t)i * sizeof(Elf64_Shdr);
        if (header.e_shentsize != sizeof(Elf64_Shdr) || !within(at, sizeof(Elf64_Shdr), length))
            return *why = "its vDSO's section headers are not in the image", -1;
        const Elf64_Shdr *section = (const Elf64_Shdr *)(image + at);
        if (section->sh_type != SHT_DYNSYM) continue;
        uint64_t link = header.e_shoff + (uint64_t)section->sh_link * sizeof(Elf64_Shdr);
        if (section->sh_link >= header.e_shnum || !within(link, sizeof(Elf64_Shdr), length)) break;
        symbols = section;
        names = (const Elf64_Shdr *)(image + link);
    }
    if (!symbols || symbols->sh_entsize != sizeof(Elf64_Sym) || !within(symbols->sh_offset, symbols->sh_size, length) ||
        !within(names->sh_offset, names->sh_size, length) || symbols->sh_offset % 8)
        return *why = "its vDSO has no dynamic symbol table this code can read", -1;
    for (uint64_t i = 0; i < symbols->sh_size / sizeof(Elf64_Sym); i++) {
        const Elf64_Sym *symbol = (const Elf64_Sym *)(image + symbols->sh_offset + i * sizeof(Elf64_Sym));
        if (symbol->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(symbol->st_info) != STT_FUNC ||
            symbol->st_name >= names->sh_size)
            continue;
        const char *name = (const char *)image + names->sh_offset + symbol->st_name;
        size_t room = names->sh_size - symbol->st_name;
        for (size_t k = 0; k < sizeof clock_symbols / sizeof clock_symbols[0]; k++) {
            size_t size = strlen(clock_symbols[k].name) + 1;
            if (size > room || memcmp(name, clock_symbols[k].name, size) != 0) continue;
            if (out->slot_count == CHAOS_VDSO_MOST_SLOTS) return *why = "its vDSO names its clocks too often", -1;
            int function = clock_symbols[k].function;
            uint64_t address = out->load_offset + symbol->st_value;
            // An alias must name the same function as the symbol it aliases.
            if (out->function[function] && out->function[function] != address)
                return *why = "its vDSO's clock symbols disagree", -1;
            out->function[function] = address;
            out->slots[out->slot_count].address =
                base + symbols->sh_offset + i * sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_value);
            out->slots[out->slot_count++].function = function;
        }
    }
    if (!out->function[CHAOS_VDSO_CLOCK_GETTIME]) return *why = "its vDSO has no clock_gettime", -1;
    // A `syscall` instruction (0f 05) anywhere in the code: the bytes are run from there.
    uint64_t end = load->p_filesz < length ? load->p_filesz : length;
    for (uint64_t i = 0; i + 1 < end && !out->instruction; i++)
        if (image[i] == 0x0f && image[i + 1] == 0x05) out->instruction = base + i;
    if (!out->instruction) return *why = "its vDSO has no system call instruction to borrow", -1;
    return 0;
}
