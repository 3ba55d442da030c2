// Whether `chaos run`'s preload library reaches a program, decided from the file before the
// program starts (by `chaos run` for its program, and by the preload library at every exec
// in the tree): a chaos tool whose chaos silently does not fire is worse than none.
//
// The preload library is loaded by the dynamic loader, so a program without one (no
// PT_INTERP: static glibc or musl builds, busybox-static, static-pie) never sees it. Go
// programs, static or linked externally, issue their system calls themselves and read the
// clock from the vDSO, so wrapping libc changes nothing for them; they carry a Go build-id
// note. A program of another ELF class or machine cannot load this library either, and the
// loader ignores LD_PRELOAD for a program that gains privileges (set-user-ID or set-group-ID
// to someone else).
//
// It runs inside exec interceptors, possibly in a vfork child that borrows its parent's
// memory: it allocates nothing, and reads headers a few at a time into the stack.
#define _GNU_SOURCE
#include "internal.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#define OWN_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define OWN_MACHINE EM_AARCH64
#else
#define OWN_MACHINE EM_NONE
#endif

enum { MAX_HEADERS = 4096, MAX_NOTES = 1 << 16, MAX_SCRIPT_DEPTH = 4 };

static int read_at(int fd, void *buffer, size_t length, uint64_t offset) {
    return pread(fd, buffer, length, (off_t)offset) == (ssize_t)length;
}

static int executable_file(const char *path) {
    struct stat info;
    return stat(path, &info) == 0 && S_ISREG(info.st_mode) && access(path, X_OK) == 0;
}

// What execvp would run for `program`: itself when it has a slash or there is no `path`
// to search (execve), else the first executable file of that name in `path`.
static int resolve(const char *program, const char *path, char *out, size_t capacity) {
    if (strchr(program, '/') || !path) return snprintf(out, capacity, "%s", program) < (int)capacity;
    while (*path) {
        const char *end = strchr(path, ':');
        size_t length = end ? (size_t)(end - path) : strlen(path);
        int written = length ? snprintf(out, capacity, "%.*s/%s", (int)length, path, program)
                             : snprintf(out, capacity, "%s", program); // an empty entry is "."
        if (written > 0 && (size_t)written < capacity && executable_file(out)) return 1;
        if (!end) break;
        path = end + 1;
    }
    return 0;
}

// Whether the notes in [offset, offset + size) of the file include Go's build id
// (owner "Go", type 4). Each note's header and owner are read on their own.
static int has_go_note(int fd, uint64_t offset, uint64_t size) {
    if (size < 12 || size > MAX_NOTES) return 0;
    for (uint64_t at = 0; at + 12 <= size;) {
        unsigned char head[16] = {0};
        if (!read_at(fd, head, at + 16 <= size ? 16 : 12, offset + at)) return 0;
        uint32_t name_size, description_size, type;
        memcpy(&name_size, head, 4);
        memcpy(&description_size, head + 4, 4);
        memcpy(&type, head + 8, 4);
        uint64_t next = at + 12 + ((name_size + 3ull) & ~3ull) + ((description_size + 3ull) & ~3ull);
        if (name_size > size || description_size > size || next > size) return 0;
        // Go writes the owner padded: "Go" and one or two NULs.
        if (type == 4 && (name_size == 3 || name_size == 4) && memcmp(head + 12, "Go", 3) == 0) return 1;
        at = next;
    }
    return 0;
}

enum { HEADERS_AT_ONCE = 16 };

// A 64-bit ELF of this machine: whether it has an interpreter, and whether it is Go's.
static enum chaos_reach inspect_elf64(int fd, const Elf64_Ehdr *header, const char *path) {
    if (header->e_phentsize != sizeof(Elf64_Phdr) || header->e_phnum == 0 || header->e_phnum > MAX_HEADERS)
        return CHAOS_REACHED; // not a program the kernel would run: the exec says why
    int interpreter = 0, go = 0;
    for (size_t first = 0; first < header->e_phnum; first += HEADERS_AT_ONCE) {
        Elf64_Phdr segments[HEADERS_AT_ONCE];
        size_t count = header->e_phnum - first < HEADERS_AT_ONCE ? header->e_phnum - first : HEADERS_AT_ONCE;
        if (!read_at(fd, segments, count * sizeof *segments, header->e_phoff + first * sizeof *segments))
            return CHAOS_REACHED;
        for (size_t i = 0; i < count; i++) {
            if (segments[i].p_type == PT_INTERP) interpreter = 1;
            if (segments[i].p_type == PT_NOTE && !go) go = has_go_note(fd, segments[i].p_offset, segments[i].p_filesz);
        }
    }
    if (!go && header->e_shentsize == sizeof(Elf64_Shdr) && header->e_shnum > 0 && header->e_shnum <= MAX_HEADERS) {
        // Notes a linker kept out of PT_NOTE segments are still in sections.
        for (size_t first = 0; first < header->e_shnum && !go; first += HEADERS_AT_ONCE) {
            Elf64_Shdr table[HEADERS_AT_ONCE];
            size_t count = header->e_shnum - first < HEADERS_AT_ONCE ? header->e_shnum - first : HEADERS_AT_ONCE;
            if (!read_at(fd, table, count * sizeof *table, header->e_shoff + first * sizeof *table)) break;
            for (size_t i = 0; i < count && !go; i++)
                if (table[i].sh_type == SHT_NOTE) go = has_go_note(fd, table[i].sh_offset, table[i].sh_size);
        }
    }
    if (go) return CHAOS_UNREACHED_GO;
    if (interpreter) return CHAOS_REACHED;
    // The dynamic loader run as a program (ld.so PROGRAM) has no interpreter of its own,
    // and preloads into what it loads.
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    if (strncmp(name, "ld-linux", 8) == 0 || strncmp(name, "ld.so", 5) == 0 || strncmp(name, "ld-musl", 7) == 0)
        return CHAOS_REACHED;
    return CHAOS_UNREACHED_STATIC;
}

/// Whether running `info`'s file gains privileges: the loader then runs in secure mode and
/// ignores LD_PRELOAD's library.
static int gains_privileges(const struct stat *info) {
    return ((info->st_mode & S_ISUID) && info->st_uid != geteuid()) ||
           ((info->st_mode & S_ISGID) && info->st_gid != getegid());
}

static enum chaos_reach inspect(const char *path, char *file, size_t capacity, int depth) {
    snprintf(file, capacity, "%s", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return CHAOS_REACHED;
    struct stat info;
    if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && gains_privileges(&info)) {
        close(fd);
        return CHAOS_UNREACHED_SETUID;
    }
    unsigned char start[256] = {0};
    ssize_t length = pread(fd, start, sizeof start - 1, 0);
    enum chaos_reach reach = CHAOS_REACHED;
    if (length >= 2 && start[0] == '#' && start[1] == '!' && depth < MAX_SCRIPT_DEPTH) {
        // A script runs its interpreter, which is what must load the library.
        char *interpreter = (char *)start + 2;
        while (*interpreter == ' ' || *interpreter == '\t') interpreter++;
        size_t span = strcspn(interpreter, " \t\r\n");
        interpreter[span] = 0;
        if (*interpreter) reach = inspect(interpreter, file, capacity, depth + 1);
    } else if (length >= (ssize_t)sizeof(Elf64_Ehdr) && memcmp(start, ELFMAG, SELFMAG) == 0) {
        Elf64_Ehdr header;
        memcpy(&header, start, sizeof header);
        if (start[EI_CLASS] != ELFCLASS64 || start[EI_DATA] != ELFDATA2LSB || header.e_machine != OWN_MACHINE)
            reach = CHAOS_UNREACHED_CLASS;
        else if (header.e_type == ET_EXEC || header.e_type == ET_DYN)
            reach = inspect_elf64(fd, &header, path);
    } else if (length >= 20 && memcmp(start, ELFMAG, SELFMAG) == 0) {
        reach = CHAOS_UNREACHED_CLASS; // a 32-bit ELF: too short for a 64-bit header
    }
    close(fd);
    return reach;
}

enum chaos_reach chaos_reach_program(const char *program, const char *search, char *file, size_t capacity) {
    char path[PATH_MAX];
    if (!program || !resolve(program, search, path, sizeof path)) return CHAOS_REACHED;
    return inspect(path, file, capacity, 0);
}

const char *chaos_reach_reason(enum chaos_reach reach) {
    switch (reach) {
    case CHAOS_UNREACHED_STATIC:
        return "it is statically linked, so no dynamic loader runs to load the preload library: no entry of the "
               "profile would act";
    case CHAOS_UNREACHED_GO:
        return "it is a Go program, which makes its system calls itself and reads the clock without libc, static or "
               "not: no entry of the profile would act";
    case CHAOS_UNREACHED_CLASS:
        return "it is an ELF of another class or machine than the preload library (e.g. 32-bit), which its "
               "dynamic loader cannot load: no entry of the profile would act";
    case CHAOS_UNREACHED_SETUID:
        return "it is set-user-ID or set-group-ID, so the dynamic loader ignores the preload library for it: no "
               "entry of the profile would act";
    default: return "it is reached";
    }
}
