"""Chaos Toolkit extension for ChaosKit: steer ChaosKit processes through their control
endpoints (the protocol of `chaos ctl`, Docs/Console.md in ChaosKit)."""

from typing import List

from chaoslib.discovery.discover import (
    discover_actions,
    discover_probes,
    initialize_discovery_result,
)
from chaoslib.types import DiscoveredActivities, Discovery

__version__ = "0.1.0"
__all__ = ["__version__", "discover"]


def discover(discover_system: bool = True) -> Discovery:
    """Discover the actions and probes of this extension, and with `discover_system` the
    ChaosKit processes with an endpoint in the endpoint directory."""
    discovery = initialize_discovery_result("chaostoolkit-chaoskit", __version__, "chaoskit")
    discovery["activities"].extend(load_exported_activities())
    if discover_system:
        discovery["system"] = explore_system()
    return discovery


def explore_system() -> dict:
    from .endpoints import all_endpoints, directory

    folder = directory()
    return {
        "directory": folder,
        "processes": [
            {"pid": e.pid, "program": e.program, "kind": e.kind, "url": e.url, "runner": e.runner}
            for e in all_endpoints(folder)
        ],
    }


def load_exported_activities() -> List[DiscoveredActivities]:
    """The actions and probes this extension exports."""
    activities = []
    activities.extend(discover_actions("chaoskit.actions"))
    activities.extend(discover_probes("chaoskit.probes"))
    return activities
