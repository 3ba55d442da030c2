// CChaosFaults: what a stream node (pace, limit, stall on send and recv) asks of a delivery
// around one transfer, a part of the engine's contract kept in its own header. Include
// CChaosFaults.h, which includes this.
//
// A connection's state — bytes moved each way, when paced bytes may move next, when it
// stalled — is the engine's (streams.c), keyed by the socket, so that every descriptor
// naming one connection shares it. A decision reserves; the delivery reports what moved.
#ifndef CCHAOS_FAULTS_STREAMS_H
#define CCHAOS_FAULTS_STREAMS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// How a connection a limit or stall node ends: reset (ECONNRESET) or closed (a receive
/// reads the end of the stream, a send fails with EPIPE).
enum { CHAOS_STREAM_END_NONE = 0, CHAOS_STREAM_END_RESET = 1, CHAOS_STREAM_END_CLOSE = 2 };

/// What a delivery does around a transfer a stream node decided.
typedef struct chaos_stream_note {
    uint64_t key;      ///< the connection (its socket's inode); 0: nothing to report
    int32_t direction; ///< 0: bytes sent, 1: bytes received
    int32_t end;       ///< CHAOS_STREAM_END_*: the call fails (FAIL) and the delivery shuts the socket down
    int64_t reserved;  ///< pace: the bytes this call was given time for
    int64_t rate;      ///< pace: bytes per second
} chaos_stream_note;

struct chaos_call;
struct chaos_outcome;

/// What a pace, limit or stall node (`kind`: CHAOS_NODE_PACE, _LIMIT, _STALL; `amount`: its
/// rate or bytes, `ns`: a stall's length, `end`: CHAOS_STREAM_END_*) decides for `call`, for an
/// answer given outside a plan (Swift answering an `ask`). Its wait is added to `delay_ns`.
/// 1 when it acts.
int chaos_stream_answer(int32_t kind, uint64_t amount, int64_t ns, int32_t end, const struct chaos_call *call,
                        struct chaos_outcome *out);

/// Whether the active plan has a linger node (toxiproxy's slow_close): only then does a
/// delivery decide closes of sockets (CHAOS_FN_SOCKET_CLOSE, at the send point).
int chaos_stream_lingers(void);

/// After a transfer whose outcome carries a stream note (`key` not 0): what it moved
/// (negative: it failed), so that the connection's counts and pace follow what really moved.
void chaos_stream_moved(const chaos_stream_note *note, int64_t moved);

#ifdef __cplusplus
}
#endif

#endif
