import urllib.error
import urllib.request


def refuse_plan(port, label="refuse the backend"):
    """A fault plan (Docs/FaultPlan.md) refusing connections to 127.0.0.1:PORT: what ChaosKit
    compiles `{"point": "system.connect", "provider": {"item": "refused", "parameters": {"port": PORT}}}` to."""
    return (
        "chaos-plan 1\n"
        "seed 1\n"
        f'entry connect label="{label}" family=inet,inet6\n'
        "node 0 composite otherwise=2\n"
        f"case 1 family=inet,inet6 port={port}\n"
        "node 1 fail errno=ECONNREFUSED\n"
        "node 2 pass\n"
    )


CLOCK_PLAN = (
    "chaos-plan 1\n"
    'entry clock label="ten days on" monotonic=no stat=yes sleep=yes\n'
    "node 0 offset by=864000000000000\n"
)

OFFSET_PROFILE = {"entries": [{"point": "system.clock", "provider": {"item": "offset", "parameters": {"by": "+10d"}}}]}


def get(port):
    """The status the front service answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
