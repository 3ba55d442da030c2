// The program's process tree after the program itself ended: what is left of it, and
// waiting for it. `chaos run` is the tree's subreaper, so orphans (daemons) become its
// children: what it has no child left of has ended.
#define _GNU_SOURCE
#include "tree.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "CChaosFaults.h"
#include "report.h"
#include "CChaosRules.h"

void chaos_tree_adopt_orphans(void) { prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

int chaos_tree_has_children(void) {
    siginfo_t info = {0};
    return waitid(P_ALL, 0, &info, WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL) == 0 || errno != ECHILD;
}

/// One process of /proc: its id, its parent's, its name, whether it has ended (a zombie).
struct process {
    pid_t pid, parent;
    char name[20];
    int ended;
};

/// Reads /proc/PID/stat: "PID (NAME) STATE PPID …"; the name may hold spaces and parens.
static int read_process(const char *pid_text, struct process *out) {
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%s/stat", pid_text);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t length = read(fd, text, sizeof text - 1);
    close(fd);
    if (length <= 0) return 0;
    text[length] = 0;
    char *open_paren = strchr(text, '('), *close_paren = strrchr(text, ')');
    if (!open_paren || !close_paren || close_paren < open_paren) return 0;
    int parent = 0;
    char state = 0;
    if (sscanf(close_paren + 1, " %c %d", &state, &parent) != 2) return 0;
    out->ended = state == 'Z' || state == 'X';
    out->pid = (pid_t)atoi(text);
    out->parent = (pid_t)parent;
    size_t name_length = (size_t)(close_paren - open_paren - 1);
    if (name_length >= sizeof out->name) name_length = sizeof out->name - 1;
    memcpy(out->name, open_paren + 1, name_length);
    out->name[name_length] = 0;
    return 1;
}

/// One look at /proc: the descendants of this process but `except`, live ones in `out`
/// (each sent `signal_number` unless it is 0); returns how many live, or -1 when one had
/// ended (the tree changed while it was read).
static int look(pid_t except, char *out, size_t capacity, int signal_number) {
    out[0] = 0;
    DIR *directory = opendir("/proc");
    if (!directory) return 0;
    size_t count = 0, allocated = 256;
    struct process *processes = malloc(allocated * sizeof *processes);
    struct dirent *item;
    while (processes && (item = readdir(directory))) {
        if (!isdigit((unsigned char)item->d_name[0])) continue;
        if (count == allocated) {
            struct process *grown = realloc(processes, (allocated *= 2) * sizeof *processes);
            if (!grown) break;
            processes = grown;
        }
        if (read_process(item->d_name, &processes[count])) count++;
    }
    closedir(directory);
    pid_t self = getpid();
    int running = 0, changed = 0;
    size_t used = 0;
    for (size_t i = 0; processes && i < count; i++) {
        if (processes[i].pid == except || processes[i].pid == self) continue;
        // Up the parents until this process (a descendant) or the top (another tree).
        pid_t parent = processes[i].parent;
        for (int depth = 0; parent > 1 && parent != self && depth < 64; depth++) {
            size_t j = 0;
            while (j < count && processes[j].pid != parent) j++;
            parent = j < count ? processes[j].parent : 0;
        }
        if (parent != self) continue;
        // A descendant that ended may have started another after the list was read.
        if (processes[i].ended) {
            changed = 1;
            continue;
        }
        running++;
        if (signal_number) kill(processes[i].pid, signal_number);
        int wrote = snprintf(out + used, capacity - used, "%s%d %s", used ? ", " : "", (int)processes[i].pid,
                             processes[i].name);
        if (wrote > 0 && (size_t)wrote < capacity - used) used += (size_t)wrote;
    }
    free(processes);
    return changed && !signal_number ? -1 : running; // ended ones are not to be signalled
}

int chaos_tree_kill(int signal_number) {
    char names[4096];
    return look(0, names, sizeof names, signal_number) > 0;
}

int chaos_tree_running(pid_t except, char *out, size_t capacity) {
    // A tree seen with an ended process in it may still be changing (a daemon's parent
    // exits as its child starts): it is looked at again, a millisecond later, until two
    // looks agree (an ended child nobody has reaped yet changes nothing).
    char previous[4096] = "";
    int running = look(except, out, capacity, 0);
    for (int attempt = 0; attempt < 20 && running < 0; attempt++) {
        snprintf(previous, sizeof previous, "%s", out);
        usleep(1000);
        running = look(except, out, capacity, 0);
        if (running < 0 && strcmp(previous, out) == 0) running = -2;
    }
    if (running >= 0) return running;
    int live = 0;
    for (const char *c = out; *c; c++) live += *c == ',';
    return out[0] ? live + 1 : 0;
}

int chaos_tree_wait_parse(const char *text, struct chaos_tree_wait *wait) {
    wait->wait = 1;
    wait->bound_ns = 0;
    if (!text || !*text) return 0;
    int64_t nanoseconds = 0;
    if (chaos_rules_parse_duration(text, &nanoseconds) != 0 || nanoseconds <= 0) return -1;
    wait->bound_ns = nanoseconds;
    return 0;
}

static int64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

int chaos_tree_wait_look(const struct chaos_report_options *options, int64_t *deadline, int interrupted, int fired,
                         struct chaos_report_run *run) {
    if (!options->wait_tree || interrupted || !chaos_tree_has_children()) return -2;
    if (options->require_fired && fired) return -2; // nothing later can change the judgement
    int64_t now = monotonic_ns();
    if (!*deadline && options->wait_bound_ns > 0) *deadline = now + options->wait_bound_ns;
    if (*deadline && now >= *deadline) {
        run->waited_out = 1;
        return -2;
    }
    // Every 100 ms at most, to look at the counts and the bound again.
    int look = options->require_fired || *deadline ? 100 : -1;
    if (*deadline && (*deadline - now) / 1000000 + 1 < look) look = (int)((*deadline - now) / 1000000 + 1);
    return look;
}

void chaos_tree_note_running(struct chaos_report_run *run, pid_t except) {
    static char running[2048];
    running[0] = 0;
    run->still_running = chaos_tree_has_children() ? chaos_tree_running(except, running, sizeof running) : 0;
    run->running = running;
}
