// The probe program of the conformance suite: `probe NAME ARGS…` runs one probe of
// probes.c and prints its result line. The suite compiles it with `cc` (this file is not
// part of the CSystemProbes target) and runs it under `chaos run`.
#include "CSystemProbes.h"

#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    static char out[65536];
    if (argc < 2) {
        static const char text[] = "usage: probe NAME ARGS…\n";
        (void)!write(2, text, sizeof text - 1);
        return 2;
    }
    int status = chaos_probe_run(argv[1], argc - 2, (const char *const *)(argv + 2), out, sizeof out - 1);
    // `inherited` runs with a file as its standard output, and answers by its status alone.
    if (strcmp(argv[1], "inherited") == 0) return status;
    size_t length = strlen(out);
    out[length++] = '\n';
    // One write(2) on the inherited descriptor 1: no stdio buffer that a fault could drop,
    // and descriptors 0–2 are touched only by entries naming them.
    for (size_t done = 0; done < length;) {
        ssize_t wrote = write(status == 0 ? 1 : 2, out + done, length - done);
        if (wrote <= 0) return 3;
        done += (size_t)wrote;
    }
    return status == 0 ? 0 : 2;
}
