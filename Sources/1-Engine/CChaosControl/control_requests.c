// The control endpoint's HTTP: a request's head checked and parsed (Host, Origin, token,
// lengths), the route it takes, and the answer rendered for the wire.
#define _GNU_SOURCE
#include "control.h"

#if defined(__linux__)

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 409: return "Conflict";
    case 422: return "Unprocessable Content";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}

static int same_token(const char *offered) {
    size_t length = strlen(offered);
    unsigned char difference = (unsigned char)(length != 64);
    for (size_t i = 0; i < 64; i++) difference |= (unsigned char)((i < length ? offered[i] : 0) ^ ctl_token[i]);
    return difference == 0;
}

/// The value of `name` in a query string, percent-decoded into `out`.
static void query_value(const char *query, const char *name, char *out, size_t capacity) {
    size_t length = strlen(name);
    out[0] = 0;
    for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        if (strncmp(p, name, length) != 0 || p[length] != '=') continue;
        size_t used = 0;
        for (const char *v = p + length + 1; *v && *v != '&' && used + 1 < capacity; v++) {
            if (*v == '%' && v[1] && v[2]) {
                char hex[3] = {v[1], v[2], 0};
                out[used++] = (char)strtol(hex, NULL, 16);
                v += 2;
            } else {
                out[used++] = *v == '+' ? ' ' : *v;
            }
        }
        out[used] = 0;
        return;
    }
}

HIDDEN void ctl_route(answer *a, request *r) {
    const char *method = r->method, *path = r->path;
    int get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0, del = strcmp(method, "DELETE") == 0;
    if (strcmp(path, "/v1/status") == 0) {
        if (!get) {
            a->allow = "GET";
            ctl_fail(a, 405, "methodNotAllowed", path, "use GET");
            return;
        }
        ctl_status_body(a);
        return;
    }
    if (strcmp(path, "/v1/go") == 0) {
        // Nothing in a `chaos run` child waits for go; the answer is the status, as elsewhere.
        if (!post) {
            a->allow = "POST";
            ctl_fail(a, 405, "methodNotAllowed", path, "use POST");
            return;
        }
        ctl_status_body(a);
        return;
    }
    if (strcmp(path, "/v1/time") == 0) {
        if (!get) {
            a->allow = "GET";
            ctl_fail(a, 405, "methodNotAllowed", path, "use GET");
            return;
        }
        ctl_time_body(a, -1, NULL);
        return;
    }
    if (strcmp(path, "/v1/time/advance") == 0) {
        if (del) {
            // Queued behind the advance it stopped, so it answers once that one has ended.
            ctl_time_body(a, -1, atomic_load(&ctl_advancing.stopped) > r->stopped_before ? "true" : "false");
            return;
        }
        if (!post) {
            a->allow = "POST, DELETE";
            ctl_fail(a, 405, "methodNotAllowed", path, "use POST to advance, DELETE to stop an advance");
            return;
        }
        char by[64], steps[32];
        query_value(r->query, "by", by, sizeof by);
        query_value(r->query, "steps", steps, sizeof steps);
        ctl_advance(a, by, steps);
        return;
    }
    if (strcmp(path, "/v1/entries") == 0) {
        if (get) {
            a->status = 200;
            ctl_put(&a->body, "[");
            for (int i = 0; i < ctl_entry_count; i++) {
                if (i) ctl_put(&a->body, ",");
                ctl_put_entry(&a->body, &ctl_entries[i]);
            }
            ctl_put(&a->body, "]");
        } else if (post) {
            const char *type = r->content_type ? r->content_type : "";
            if (strncasecmp(type, "text/x-chaos-plan", 17) != 0 && strncasecmp(type, "text/plain", 10) != 0) {
                char subject[100];
                snprintf(subject, sizeof subject, "Content-Type: %.80s", type);
                ctl_fail(a, 415, "unsupportedMediaType", subject,
                         "a chaos run child takes plan text (Content-Type: text/x-chaos-plan, Docs/FaultPlan.md); "
                         "`chaos ctl apply` compiles a JSON profile to it");
                return;
            }
            char source[256];
            query_value(r->query, "source", source, sizeof source);
            ctl_apply(a, r->body ? r->body : "", r->body_length, source[0] ? source : "plan");
        } else if (del) {
            char include[8];
            query_value(r->query, "includeClock", include, sizeof include);
            ctl_revert(a, 0, "", strcmp(include, "true") == 0);
        } else {
            a->allow = "GET, POST, DELETE";
            ctl_fail(a, 405, "methodNotAllowed", path, "use GET, POST or DELETE");
        }
        return;
    }
    if (strncmp(path, "/v1/entries/", 12) == 0) {
        const char *rest = path + 12;
        char *end;
        long id = strtol(rest, &end, 10);
        if (end == rest || id <= 0 || id > 1000000000 || (*end && *end != '/')) {
            char subject[100];
            snprintf(subject, sizeof subject, "%.80s", rest);
            ctl_fail(a, 404, "notFound", subject, "an entry id is a positive number, e.g. /v1/entries/3");
            return;
        }
        char text[32];
        snprintf(text, sizeof text, "%ld", id);
        if (!*end) {
            if (get) {
                control_entry *entry = ctl_find((int)id);
                if (!entry) {
                    ctl_not_applied(a, text);
                    return;
                }
                a->status = 200;
                ctl_put_entry(&a->body, entry);
            } else if (del) {
                ctl_revert(a, (int)id, text, 0);
            } else {
                a->allow = "GET, DELETE";
                ctl_fail(a, 405, "methodNotAllowed", path, "use GET or DELETE");
            }
            return;
        }
        int enable = strcmp(end, "/enable") == 0, disable = strcmp(end, "/disable") == 0;
        if (enable || disable) {
            if (!post) {
                a->allow = "POST";
                ctl_fail(a, 405, "methodNotAllowed", path, "use POST");
                return;
            }
            ctl_set_enabled(a, (int)id, text, enable);
            return;
        }
    }
    char subject[100];
    snprintf(subject, sizeof subject, "%.80s", path);
    ctl_fail(a, 404, "notFound", subject,
             "no such route here; a chaos run child serves /v1/status, /v1/entries[/ID[/enable|/disable]], "
             "/v1/time[/advance] and /v1/go (no points, profile validation or export, response sets, events, call "
             "journal or console)");
}

/// Copies a header's value (trimmed) into `r`'s head buffer in place.
static const char *header_value(char *value) {
    while (*value == ' ' || *value == '\t') value++;
    char *end = value + strlen(value);
    while (end > value && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) *--end = 0;
    return value;
}

/// The whole answer, head and body, ready to send.
HIDDEN void ctl_render(answer *a, buffer *out) {
    if (a->body.failed) {
        free(a->body.data);
        a->body = (buffer){0};
        ctl_fail(a, 500, "systemFailure", NULL, "out of memory while answering");
    }
    ctl_put(out,
            "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: "
            "close\r\nCache-Control: no-store\r\n",
            a->status, reason(a->status), a->body.length);
    if (a->status == 401) ctl_put(out, "WWW-Authenticate: Bearer\r\n");
    if (a->status == 503) ctl_put(out, "Retry-After: 1\r\n");
    if (a->allow) ctl_put(out, "Allow: %s\r\n", a->allow);
    ctl_put(out, "\r\n");
    if (a->body.length) ctl_put_bytes(out, a->body.data, a->body.length);
}

/// Parses `head` (complete: `head_length` bytes, ending in the blank line) into `r`. Returns
/// 1 when the request is good so far (its body may still be on its way), 0 when `a` holds
/// the refusal.
HIDDEN int ctl_parse_head(char *head, size_t head_length, request *r, answer *a) {
    r->content_length = -1;
    head[head_length - 4] = 0;
    if (memchr(head, 0, head_length - 4)) {
        ctl_fail(a, 400, "badRequest", NULL, "the request head holds a NUL byte");
        return 0;
    }
    char *line_end = strstr(head, "\r\n");
    if (line_end) *line_end = 0;
    char target[2048], version[16];
    if (sscanf(head, "%15s %2047s %15s", r->method, target, version) != 3 || strncmp(version, "HTTP/1.", 7) != 0) {
        ctl_fail(a, 400, "badRequest", NULL, "the request line is not METHOD PATH HTTP/1.1");
        return 0;
    }
    char *question = strchr(target, '?');
    if (question) {
        *question = 0;
        snprintf(r->query, sizeof r->query, "%s", question + 1);
    }
    snprintf(r->path, sizeof r->path, "%s", target);
    int lengths = 0;
    for (char *line = line_end ? line_end + 2 : NULL; line && *line;) {
        char *next = strstr(line, "\r\n");
        if (next) *next = 0;
        char *colon = strchr(line, ':');
        if (colon) {
            *colon = 0;
            const char *value = header_value(colon + 1);
            if (strcasecmp(line, "Host") == 0)
                r->host = value;
            else if (strcasecmp(line, "Authorization") == 0)
                r->authorization = value;
            else if (strcasecmp(line, "Content-Type") == 0)
                r->content_type = value;
            else if (strcasecmp(line, "Content-Length") == 0) {
                char *end;
                errno = 0;
                long long length = strtoll(value, &end, 10);
                // Two lengths, or one that is not a plain number, is how requests get smuggled.
                if (lengths++ || end == value || *end || errno || length < 0)
                    r->content_length = -2;
                else
                    r->content_length = length;
            } else if (strcasecmp(line, "Origin") == 0)
                r->origin = value;
            else if (strcasecmp(line, "Transfer-Encoding") == 0)
                r->transfer_encoding = value;
            else if (strcasecmp(line, "Sec-Fetch-Site") == 0)
                r->fetch_site = value;
        }
        line = next ? next + 2 : NULL;
    }
    char subject[120];
    if (!r->host || strcasecmp(r->host, "localhost") != 0) {
        snprintf(subject, sizeof subject, "Host: %.80s", r->host ? r->host : "");
        ctl_fail(a, 403, "forbiddenHost", r->host ? subject : "Host",
                 "the request does not name this endpoint in its Host header; send Host: localhost");
    } else if (r->origin || (r->fetch_site && strcmp(r->fetch_site, "cross-site") == 0)) {
        snprintf(subject, sizeof subject, "Origin: %.80s", r->origin ? r->origin : "");
        ctl_fail(a, 403, "forbiddenOrigin", subject, "requests from web pages are refused; use chaos ctl");
    } else if (!r->authorization || strncasecmp(r->authorization, "Bearer ", 7) != 0) {
        ctl_fail(a, 401, "unauthorized", "Authorization",
                 "the request carries no token; send Authorization: Bearer TOKEN with the token from this process's "
                 "endpoint file (chaos ctl does)");
    } else if (!same_token(header_value((char *)r->authorization + 7))) {
        ctl_fail(a, 401, "unauthorized", "Authorization",
                 "the token is not this session's; read it again from the endpoint file (the token changes with every "
                 "start)");
    } else if (r->transfer_encoding) {
        ctl_fail(a, 400, "badRequest", "Transfer-Encoding",
                 "send the body with Content-Length (at most 1 MiB), not chunked");
    } else if (r->content_length == -2) {
        ctl_fail(a, 400, "badRequest", "Content-Length", "send one Content-Length, a plain decimal number");
    } else if (r->content_length > MAX_BODY) {
        ctl_fail(a, 413, "payloadTooLarge", "Content-Length", "a body may hold at most 1 MiB");
    } else {
        return 1;
    }
    return 0;
}

#endif
