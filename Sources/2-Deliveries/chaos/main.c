// `chaos`: the command-line front end. Every subcommand is the Swift tool's (`chaos-tool`,
// installed beside this file), except the hot path of `chaos run`: a program started under
// a profile must not wait for a Swift runtime to start, so a profile once compiled into a
// fault plan (by `chaos-tool run`, which writes it to a cache) is run from here, in C:
// read the cached plan, choose the seed, set LD_PRELOAD and the plan, start the program
// (as its parent, which reports what fired when it ends: parent.c).
//
// The cache key covers the profile's bytes, the current UTC day (clock offsets in calendar
// years are converted on the day they run), the working directory (relative paths in a
// profile are resolved from it when it is compiled), the tool and the preload library: a
// change to any of them compiles the profile again.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "development.h"
#include "parent.h"
#include "power.h"
#include "supervise.h"
#include "tree.h"

#define MAX_PROFILE (1 << 20)
/// How long --require-fired waits for the program's tree, without --wait-tree.
#define REQUIRE_FIRED_WAIT_NS (5 * 1000000000ll)
#define MAX_CACHED (4 << 20)

static const char *self_directory(char *buffer, size_t capacity) {
    ssize_t length = readlink("/proc/self/exe", buffer, capacity - 1);
    if (length <= 0) return NULL;
    buffer[length] = 0;
    char *slash = strrchr(buffer, '/');
    if (!slash) return NULL;
    *slash = 0;
    return buffer;
}

static int joined(char *out, size_t capacity, const char *directory, const char *name) {
    int written = snprintf(out, capacity, "%s/%s", directory, name);
    return written > 0 && (size_t)written < capacity;
}

// The Swift tool: $CHAOS_TOOL, else chaos-tool beside this program.
static int tool_path(char *out, size_t capacity) {
    const char *given = getenv("CHAOS_TOOL");
    if (given && *given) return snprintf(out, capacity, "%s", given) < (int)capacity;
    char directory[PATH_MAX];
    if (!self_directory(directory, sizeof directory)) return 0;
    return joined(out, capacity, directory, "chaos-tool");
}

// The preload library: --preload, $CHAOS_PRELOAD_LIBRARY, beside this program, or
// ../lib beside it (an installed layout).
static int preload_path(const char *option, char *out, size_t capacity) {
    const char *given = option ? option : getenv("CHAOS_PRELOAD_LIBRARY");
    if (given && *given) return access(given, R_OK) == 0 && snprintf(out, capacity, "%s", given) < (int)capacity;
    char directory[PATH_MAX];
    if (!self_directory(directory, sizeof directory)) return 0;
    if (joined(out, capacity, directory, "libChaosPreload.so") && access(out, R_OK) == 0) return 1;
    return joined(out, capacity, directory, "../lib/libChaosPreload.so") && access(out, R_OK) == 0;
}

static uint64_t fnv(uint64_t hash, const void *data, size_t length) {
    const unsigned char *bytes = data;
    for (size_t i = 0; i < length; i++) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
    return hash;
}

static uint64_t file_identity(uint64_t hash, const char *path) {
    struct stat info;
    if (stat(path, &info) != 0) return fnv(hash, "missing", 7);
    hash = fnv(hash, &info.st_size, sizeof info.st_size);
    hash = fnv(hash, &info.st_mtim.tv_sec, sizeof info.st_mtim.tv_sec);
    return fnv(hash, &info.st_mtim.tv_nsec, sizeof info.st_mtim.tv_nsec);
}

static char *read_file(const char *path, size_t limit, size_t *length) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    char *buffer = malloc(limit + 1);
    size_t used = 0;
    while (buffer && used < limit) {
        ssize_t got = read(fd, buffer + used, limit - used);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        used += (size_t)got;
    }
    close(fd);
    if (!buffer || used == limit) {
        free(buffer);
        return NULL;
    }
    buffer[used] = 0;
    *length = used;
    return buffer;
}

// Where `chaos-tool run` keeps the compiled plan of a profile (this key names it).
static int cache_path(char *out, size_t capacity, const char *profile_path, const char *tool, const char *preload) {
    size_t length = 0;
    char *profile = read_file(profile_path, MAX_PROFILE, &length);
    if (!profile) return 0;
    uint64_t key = fnv(0xcbf29ce484222325ull, "chaoskit-run 1", 14);
    key = fnv(key, profile, length);
    free(profile);
    int64_t day = (int64_t)(time(NULL) / 86400);
    key = fnv(key, &day, sizeof day);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return 0; // no key without it: the tool compiles afresh
    key = fnv(key, cwd, strlen(cwd));
    key = file_identity(key, tool);
    key = file_identity(key, preload);
    const char *base = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (base && *base)
        return snprintf(out, capacity, "%s/chaoskit/plans/%016llx.plan", base, (unsigned long long)key) < (int)capacity;
    if (home && *home)
        return snprintf(out, capacity, "%s/.cache/chaoskit/plans/%016llx.plan", home, (unsigned long long)key) <
               (int)capacity;
    return 0;
}

// Decodes `text` in place: \\, \n and \xHH escapes (as chaos-tool writes environment values).
static void unescape(char *text) {
    char *out = text;
    for (char *in = text; *in; in++) {
        if (*in != '\\' || !in[1]) {
            *out++ = *in;
            continue;
        }
        in++;
        if (*in == 'n')
            *out++ = '\n';
        else if (*in == 'x' && in[1] && in[2]) {
            char hex[3] = {in[1], in[2], 0};
            *out++ = (char)strtol(hex, NULL, 16);
            in += 2;
        } else
            *out++ = *in;
    }
    *out = 0;
}

/// How `chaos run` was asked to start its program.
struct run_options {
    const char *seed;     ///< --seed (NULL: the profile's, $CHAOS_SEED, or drawn)
    const char *preload;  ///< the preload library
    const char *delivery; ///< --delivery: "auto" (default), "preload" or "seccomp"
    int allow_unreached;  ///< --allow-unreached
    struct chaos_report_options report;
};

/// Says that `argv[0]` cannot be reached and why; with --allow-unreached, warns instead and
/// returns 0 (the program then runs without chaos), else returns 125.
static int unreached(char **argv, const char *file, const char *reason, int allow_unreached) {
    int same = strcmp(file, argv[0]) == 0;
    if (allow_unreached) {
        fprintf(stderr, "chaos run: warning: %s%s%s%s runs without chaos (--allow-unreached): %s\n", argv[0],
                same ? "" : " (", same ? "" : file, same ? "" : ")", reason);
        return 0;
    }
    fprintf(stderr, "chaos run: %s%s%s%s cannot be reached: %s. Or pass --allow-unreached to run it without chaos.\n",
            argv[0], same ? "" : " (", same ? "" : file, same ? "" : ")", reason);
    return 125;
}

/// Which delivery reaches `argv[0]`: 'p' (preload), 's' (seccomp), 'n' (none: run it
/// plainly, as --allow-unreached asked), or 0 after saying why it was refused (125).
/// Chaos that silently never fires is worse than none: a program the preload library
/// cannot reach goes to the seccomp supervisor, and one neither reaches is refused.
/// For 's', the plan it checked goes in `*supervised` (the caller's to run).
static char choose_delivery(char **argv, const char *plan_text, const struct run_options *options,
                            chaos_plan **supervised) {
    char file[PATH_MAX];
    enum chaos_reach reach =
        chaos_reach_program(argv[0], getenv("PATH") ? getenv("PATH") : "/bin:/usr/bin", file, sizeof file);
    int asked_seccomp = strcmp(options->delivery, "seccomp") == 0,
        asked_preload = strcmp(options->delivery, "preload") == 0;
    // A set-user-ID program under the seccomp delivery would run without its privileges
    // (the filter needs no_new_privs): not the program the user asked for.
    if (reach == CHAOS_UNREACHED_CLASS || reach == CHAOS_UNREACHED_SETUID || (asked_preload && reach != CHAOS_REACHED))
        return unreached(argv, file, chaos_reach_reason(reach), options->allow_unreached) ? 0 : 'n';
    char why[512];
    chaos_plan_error error;
    chaos_plan *plan = chaos_plan_parse(plan_text, strlen(plan_text), &error);
    // Power loss must see every change to a file, and the preload library misses writes the
    // C library makes inside itself (stdio flushing): a rollback that misses writes lies.
    int power = plan && chaos_power_planned(plan);
    if (power && asked_preload) {
        chaos_plan_free(plan);
        fprintf(stderr,
                "chaos run: a power-loss entry needs every write the program makes, and the preload delivery does "
                "not see writes inside the C library (stdio flushes); leave out --delivery preload (power loss runs "
                "under the seccomp delivery)\n");
        return 0;
    }
    if (!asked_seccomp && !power && reach == CHAOS_REACHED) {
        chaos_plan_free(plan);
        return 'p';
    }
    if (!plan)
        snprintf(why, sizeof why, "its plan is damaged (%s); run again with --no-cache", error.message);
    else if (!chaos_seccomp_available())
        snprintf(why, sizeof why,
                 "%s, and this kernel has no seccomp user notification (Linux 5.5 or later) for the seccomp delivery",
                 chaos_reach_reason(reach));
    else if (chaos_seccomp_refusal(plan, why, sizeof why) == 0) {
        *supervised = plan;
        return 's';
    }
    chaos_plan_free(plan);
    return unreached(argv, file, why, options->allow_unreached) ? 0 : 'n';
}

// Runs `argv` (the program and its arguments) under the compiled plan `cached`, which
// starts with directive lines (`env NAME=VALUE`, `unenv NAME`, `seed N` when the profile
// fixes one, `draws` when the plan has probabilities) and a line `plan`, followed by the
// plan text without its seed.
static int run(char *cached, const struct run_options *options, char **argv) {
    if (strncmp(cached, "chaoskit-run 1\n", 15) != 0) {
        fprintf(stderr, "chaos run: the compiled plan is damaged; run again with --no-cache\n");
        return 125;
    }
    char *directives = cached + 15, *plan;
    if (strncmp(directives, "plan\n", 5) == 0) {
        *directives = 0;
        plan = directives + 5;
    } else if ((plan = strstr(directives - 1, "\nplan\n"))) {
        *plan = 0;
        plan += 6;
    } else {
        fprintf(stderr, "chaos run: the compiled plan is damaged; run again with --no-cache\n");
        return 125;
    }
    const char *profile_seed = NULL;
    int draws = 0;
    for (char *line = strtok(directives, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "env ", 4) == 0) {
            char *equals = strchr(line + 4, '=');
            if (!equals) continue;
            *equals = 0;
            unescape(equals + 1);
            setenv(line + 4, equals + 1, 1);
        } else if (strncmp(line, "unenv ", 6) == 0) {
            unsetenv(line + 6);
        } else if (strncmp(line, "seed ", 5) == 0) {
            profile_seed = line + 5;
        } else if (strcmp(line, "draws") == 0) {
            draws = 1;
        }
    }
    char seed_text[32];
    const char *seed = options->seed ? options->seed : getenv("CHAOS_SEED");
    if (seed && *seed) {
        char *end = NULL;
        errno = 0;
        unsigned long long value = strtoull(seed, &end, 10);
        if (errno || !end || *end || seed[0] == '-') {
            fprintf(stderr, "chaos run: seed '%.80s' is not a whole number from 0 to 2^64-1; give a seed such as 42\n",
                    seed);
            return 64;
        }
        snprintf(seed_text, sizeof seed_text, "%llu", value);
    } else if (profile_seed) {
        snprintf(seed_text, sizeof seed_text, "%s", profile_seed);
    } else {
        uint64_t drawn = 0;
        if (getrandom(&drawn, sizeof drawn, 0) != sizeof drawn) drawn = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
        drawn &= (1ull << 53) - 1; // a seed profiles can write too
        snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)drawn);
        // Only a plan that draws (probability) needs its seed to be replayed.
        if (draws)
            fprintf(stderr, "chaos run: seed %s (replay with --seed %s or CHAOS_SEED=%s)\n", seed_text, seed_text,
                    seed_text);
    }
    size_t plan_length = strlen(plan);
    char *text = malloc(plan_length + 64);
    if (!text) return 125;
    snprintf(text, plan_length + 64, "chaos-plan 1\nseed %s\n%s", seed_text, plan);
    unsetenv("CHAOS_PLAN");
    chaos_plan *supervised = NULL;
    char delivery = choose_delivery(argv, text, options, &supervised);
    if (!delivery) return 125;
    // Every exec in the tree is checked as this one was: they run anyway only when asked.
    if (options->allow_unreached)
        setenv("CHAOS_ALLOW_UNREACHED", "1", 1);
    else
        unsetenv("CHAOS_ALLOW_UNREACHED");
    if (delivery == 's') return chaos_supervise(supervised, argv, &options->report);
    if (delivery == 'n') chaos_parent_become(argv);
    setenv("CHAOS_PLAN_TEXT", text, 1);
    const char *preload = options->preload;
    const char *existing = getenv("LD_PRELOAD");
    char *libraries = malloc(strlen(preload) + (existing ? strlen(existing) : 0) + 2);
    if (!libraries) return 125;
    sprintf(libraries, existing && *existing ? "%s %s" : "%s", preload, existing ? existing : "");
    setenv("LD_PRELOAD", libraries, 1);
    return chaos_run_preloaded(text, argv, &options->report);
}

// The Swift tool that compiles a plan blocks and ignores signals of its own (the runtime
// does), and a program started from it would inherit that: it would ignore `kill` and
// `timeout`. So the launcher writes down the signal mask and the ignored signals it was
// started with, and restores them before it starts the program. Two hex masks, signals
// 1…63.
static void save_signals(void) {
    sigset_t mask;
    sigprocmask(SIG_BLOCK, NULL, &mask);
    unsigned long long blocked = 0, ignored = 0;
    for (int signal = 1; signal < 64; signal++) {
        if (sigismember(&mask, signal) == 1) blocked |= 1ull << signal;
        struct sigaction action;
        if (sigaction(signal, NULL, &action) == 0 && action.sa_handler == SIG_IGN) ignored |= 1ull << signal;
    }
    char text[64];
    snprintf(text, sizeof text, "%llx:%llx", blocked, ignored);
    setenv("CHAOS_RUN_SIGNALS", text, 1);
}

static void restore_signals(void) {
    const char *text = getenv("CHAOS_RUN_SIGNALS");
    unsigned long long blocked = 0, ignored = 0;
    if (!text || sscanf(text, "%llx:%llx", &blocked, &ignored) != 2) return;
    unsetenv("CHAOS_RUN_SIGNALS");
    sigset_t mask;
    sigemptyset(&mask);
    for (int signal = 1; signal < 64; signal++) {
        if (blocked >> signal & 1) sigaddset(&mask, signal);
        struct sigaction action;
        if (!(ignored >> signal & 1) && sigaction(signal, NULL, &action) == 0 && action.sa_handler == SIG_IGN) {
            struct sigaction fallback = {0};
            fallback.sa_handler = SIG_DFL;
            sigaction(signal, &fallback, NULL);
        }
    }
    sigprocmask(SIG_SETMASK, &mask, NULL);
}

static int regular_file(const char *path) {
    struct stat info;
    return strcmp(path, "-") != 0 && stat(path, &info) == 0 && S_ISREG(info.st_mode);
}

// `chaos run [--profile F] [--seed N] [--preload P] [--no-cache] -- PROGRAM ARGS…` from a
// compiled plan; returns -1 (and changes nothing) when the Swift tool must do it, having
// written into `cache` where the tool should keep the plan it compiles ("" when unknown).
static int fast_run(int argc, char **argv, const char *tool, char *cache, size_t cache_capacity) {
    const char *profile = NULL, *preload_option = NULL, *io_uring = "refuse";
    struct run_options options = {.delivery = "auto"};
    int command = -1;
    cache[0] = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            command = i + 1;
            break;
        }
        if (strcmp(a, "--profile") == 0 && i + 1 < argc)
            profile = argv[++i];
        else if (strncmp(a, "--profile=", 10) == 0)
            profile = a + 10;
        else if (strcmp(a, "--seed") == 0 && i + 1 < argc)
            options.seed = argv[++i];
        else if (strncmp(a, "--seed=", 7) == 0)
            options.seed = a + 7;
        else if (strcmp(a, "--preload") == 0 && i + 1 < argc)
            preload_option = argv[++i];
        else if (strncmp(a, "--preload=", 10) == 0)
            preload_option = a + 10;
        else if (strcmp(a, "--allow-unreached") == 0)
            options.allow_unreached = 1;
        else if (strcmp(a, "--quiet") == 0)
            options.report.quiet = 1;
        else if (strcmp(a, "--require-fired") == 0)
            options.report.require_fired = 1;
        else if (strcmp(a, "--report") == 0 && i + 1 < argc)
            options.report.path = argv[++i];
        else if (strncmp(a, "--report=", 9) == 0)
            options.report.path = a + 9;
        else if (strcmp(a, "--wait-tree") == 0)
            options.report.wait_tree = 1;
        else if (strncmp(a, "--wait-tree=", 12) == 0) {
            struct chaos_tree_wait wait;
            if (chaos_tree_wait_parse(a + 12, &wait) != 0) return -1; // the tool says what it takes
            options.report.wait_tree = 1;
            options.report.wait_bound_ns = wait.bound_ns;
        } else if (strcmp(a, "--io-uring") == 0 && i + 1 < argc)
            io_uring = argv[++i];
        else if (strncmp(a, "--io-uring=", 11) == 0)
            io_uring = a + 11;
        else if (strcmp(a, "--delivery") == 0 && i + 1 < argc)
            options.delivery = argv[++i];
        else if (strncmp(a, "--delivery=", 11) == 0)
            options.delivery = a + 11;
        else
            return -1; // --no-cache, --help, a mistake: the tool answers
    }
    if (!profile || command < 0 || command >= argc) return -1;
    if (strcmp(io_uring, "refuse") != 0 && strcmp(io_uring, "allow") != 0) return -1; // the tool says what it takes
    options.report.io_uring_allowed = strcmp(io_uring, "allow") == 0;
    // --require-fired judges the whole tree, but a daemon that never ends must not hang it.
    if (options.report.require_fired && !options.report.wait_tree) {
        options.report.wait_tree = 1;
        options.report.wait_bound_ns = REQUIRE_FIRED_WAIT_NS;
    }
    if (strcmp(options.delivery, "auto") != 0 && strcmp(options.delivery, "preload") != 0 &&
        strcmp(options.delivery, "seccomp") != 0)
        return -1; // the tool says what --delivery takes
    // A plan the tool just compiled (it starts us again with it), or one compiled earlier.
    // One compiled for this run only is deleted as soon as it is read, whatever follows.
    const char *compiled = getenv("CHAOS_RUN_COMPILED");
    int just_compiled = compiled && *compiled;
    char path[PATH_MAX];
    size_t length = 0;
    char *cached = NULL;
    if (just_compiled) {
        snprintf(path, sizeof path, "%s", compiled);
        cached = read_file(path, MAX_CACHED, &length);
        const char *once = getenv("CHAOS_RUN_COMPILED_ONCE");
        if (once && *once) unlink(path);
        unsetenv("CHAOS_RUN_COMPILED");
        unsetenv("CHAOS_RUN_COMPILED_ONCE");
        restore_signals();
        if (!cached) {
            fprintf(stderr, "chaos run: the compiled plan %s cannot be read\n", path);
            return 125;
        }
    }
    char preload[PATH_MAX];
    if (!preload_path(preload_option, preload, sizeof preload)) {
        if (!just_compiled) return -1; // the tool says what is missing
        // Handing back to the tool would compile and start us again, for ever.
        fprintf(stderr,
                "chaos run: the preload library %s cannot be read; build it with `swift build --product ChaosPreload`, "
                "or name it with --preload\n",
                preload_option                    ? preload_option
                : getenv("CHAOS_PRELOAD_LIBRARY") ? getenv("CHAOS_PRELOAD_LIBRARY")
                                                  : "libChaosPreload.so");
        return 125;
    }
    if (!just_compiled) {
        // A pipe (`-`, `<(…)`) can be read once: by the tool, which compiles it.
        if (!regular_file(profile) || !cache_path(path, sizeof path, profile, tool, preload)) return -1;
        cached = read_file(path, MAX_CACHED, &length);
        if (!cached) {
            snprintf(cache, cache_capacity, "%s", path);
            return -1;
        }
    }
    options.preload = preload;
    return run(cached, &options, argv + command);
}

// The folders (from the checkout's root) each product is built from: in a checkout's build
// folder, a product older than any of them is built again first. They are the product's
// targets and what those depend on, as Package.swift says; a test (LauncherSourcesTests)
// holds these lists to the manifest.
static const char *const tool_sources[] = {
    "Sources/4-Tools/chaos-tool",
    "Sources/3-SwiftAPI/ChaosKit",
    "Sources/3-SwiftAPI/ChaosPoints",
    "Sources/3-SwiftAPI/ChaosHooks",
    "Sources/3-SwiftAPI/ChaosNetwork",
    "Sources/3-SwiftAPI/ChaosControl",
    "Sources/3-SwiftAPI/CChaosGrace",
    "Sources/3-SwiftAPI/CChaosELF",
    "Sources/1-Engine/CChaosFaults",
    "Sources/1-Engine/CChaosRules",
    "Sources/2-Deliveries/CChaosIntercept",
    "Sources/2-Deliveries/Interceptors",
    "Sources/3-SwiftAPI/CFFI",
    NULL,
};
static const char *const preload_sources[] = {"Sources/2-Deliveries/CChaosPreload", "Sources/1-Engine/CChaosFaults",
                                              "Sources/1-Engine/CChaosRules",       "Sources/1-Engine/CChaosControl",
                                              "Sources/2-Deliveries/Interceptors",  NULL};

// Whether `chaos run` was given a preload library of its own (--preload, or the variable).
static int preload_given(int argc, char **argv) {
    const char *variable = getenv("CHAOS_PRELOAD_LIBRARY");
    if (variable && *variable) return 1;
    for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--preload") == 0 || strncmp(argv[i], "--preload=", 10) == 0) return 1;
    }
    return 0;
}

// In a checkout's build folder (`swift run chaos …`), builds what is missing or out of
// date: the tool (`tool`), and for `run` (`preload`) the preload library. Returns 0 when
// one cannot be had.
static int ensure_built(int argc, char **argv, const char *tool, int preload) {
    const char *given = getenv("CHAOS_TOOL");
    char directory[PATH_MAX];
    struct chaos_development layout;
    if ((given && *given) || !self_directory(directory, sizeof directory)) return 1;
    if (!chaos_development_layout(directory, &layout)) return 1;
    if (tool && !chaos_development_ensure(&layout, tool, "chaos-tool", tool_sources)) return 0;
    if (preload && argc > 1 && strcmp(argv[1], "run") == 0 && !preload_given(argc, argv)) {
        char library[PATH_MAX];
        if (!joined(library, sizeof library, directory, "libChaosPreload.so")) return 1;
        return chaos_development_ensure(&layout, library, "ChaosPreload", preload_sources);
    }
    return 1;
}

// `--version`: what Scripts/install wrote beside the launcher (VERSION: the version and
// the commit it was built from); a launcher without it runs from a build folder.
static int print_version(void) {
    char directory[PATH_MAX], file[PATH_MAX], text[256] = "";
    if (self_directory(directory, sizeof directory) && joined(file, sizeof file, directory, "VERSION")) {
        FILE *version = fopen(file, "re");
        if (version) {
            size_t got = fread(text, 1, sizeof text - 1, version);
            fclose(version);
            text[got] = 0;
            text[strcspn(text, "\n")] = 0;
        }
    }
    printf("chaoskit %s\n", text[0] ? text : "(a development build: run from a build folder, not installed)");
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--version") == 0) return print_version();
    char tool[PATH_MAX];
    if (!tool_path(tool, sizeof tool)) {
        fprintf(stderr, "chaos: cannot find chaos-tool beside this program; set CHAOS_TOOL\n");
        return 127;
    }
    int running = argc > 1 && strcmp(argv[1], "run") == 0;
    // A run from a plan compiled earlier needs only the preload library; the tool's
    // sources (a few hundred files to look at) are looked at when the tool is needed.
    if (!ensure_built(argc, argv, running ? NULL : tool, running)) return 127;
    if (running) {
        char cache[PATH_MAX];
        int status = fast_run(argc, argv, tool, cache, sizeof cache);
        if (status >= 0) return status;
        if (!ensure_built(argc, argv, tool, 0)) return 127;
        // The tool compiles the profile, keeps the plan where we will look for it next
        // time, and starts us again with it.
        if (cache[0]) setenv("CHAOS_RUN_CACHE", cache, 1);
        save_signals();
        char self[PATH_MAX];
        ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
        if (length > 0) {
            self[length] = 0;
            setenv("CHAOS_LAUNCHER", self, 1);
        }
    }
    // Installed, the launcher is `chaoskit` (Chaos Toolkit's command is `chaos`): the tool's
    // help and the commands it suggests then say the name that was typed.
    const char *typed = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    if (strcmp(typed, "chaoskit") == 0) setenv("CHAOS_TOOL_NAME", typed, 1);
    execv(tool, argv);
    fprintf(stderr, "chaos: cannot run %s: %s%s\n", tool, strerror(errno),
            errno == ENOENT ? " (build it with `swift build`, or install it beside this program)" : "");
    return 127;
}

// The Swift driver links every executable with the runtime; these flags, which it places
// among its own, drop the runtime from DT_NEEDED, since nothing here calls it.
#ifdef __ELF__
__attribute__((used, section(".swift1_autolink_entries"))) static const char chaos_launcher_autolink[] =
    "-Xlinker\0--as-needed";
#endif
