// UTF-8 for everything the engine and the control endpoint write as text: answers must be
// valid UTF-8 (JSON requires it), whatever bytes a request, a plan or a program name held.
// Well-formed means Unicode's table 3-7: no overlong forms, no surrogates, nothing past
// U+10FFFF. An ill-formed part is measured as Swift's and Python's decoders measure it (the
// "maximal subpart"), so one U+FFFD written here stands where they would put one.
#include "internal.h"

/// The character at the start of `text`: its length, with `*state` 1 when well-formed, -1
/// when the text ends inside it (a character cut short) and 0 when a byte is wrong.
static size_t scan(const unsigned char *text, size_t length, int *state) {
    unsigned char lead = text[0];
    size_t need;
    unsigned char low = 0x80, high = 0xBF; // the range of the second byte
    if (lead < 0x80) {
        *state = 1;
        return 1;
    }
    if (lead >= 0xC2 && lead <= 0xDF)
        need = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) {
        need = 3;
        if (lead == 0xE0)
            low = 0xA0; // else overlong
        else if (lead == 0xED)
            high = 0x9F; // else a surrogate
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        need = 4;
        if (lead == 0xF0)
            low = 0x90; // else overlong
        else if (lead == 0xF4)
            high = 0x8F; // else past U+10FFFF
    } else {
        *state = 0; // a continuation byte alone, C0, C1 (overlong) or F5 and up
        return 1;
    }
    for (size_t i = 1; i < need; i++) {
        if (i >= length) {
            *state = -1;
            return i;
        }
        unsigned char c = text[i];
        if (c < (i == 1 ? low : 0x80) || c > (i == 1 ? high : 0xBF)) {
            *state = 0;
            return i;
        }
    }
    *state = 1;
    return need;
}

size_t chaos_utf8_next(const char *text, size_t length, int *valid) {
    int state;
    size_t count = scan((const unsigned char *)text, length, &state);
    *valid = state == 1;
    return count;
}

int chaos_utf8_valid(const char *text, size_t length, size_t *bad) {
    for (size_t i = 0; i < length;) {
        int state;
        size_t count = scan((const unsigned char *)text + i, length - i, &state);
        if (state != 1) {
            if (bad) *bad = i;
            return 0;
        }
        i += count;
    }
    return 1;
}

size_t chaos_utf8_cut(const char *text, size_t length, size_t limit) {
    size_t i = 0;
    while (i < length) {
        int state;
        size_t count = scan((const unsigned char *)text + i, length - i, &state);
        if (i + count > limit) break;
        i += count;
    }
    return i;
}

size_t chaos_utf8_trim_incomplete(const char *text, size_t length) {
    for (size_t i = 0; i < length;) {
        int state;
        size_t count = scan((const unsigned char *)text + i, length - i, &state);
        if (state == -1) return i; // only the end of the text stops a character short
        i += count;
    }
    return length;
}
