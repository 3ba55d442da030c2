#!/usr/bin/env python3
"""Prints what gpxpy reads from each GPX file given, as JSON (one object per file), so that
the GPX comparison test can check ChaosKit's reader against it point by point.

Numbers that are not finite and fields gpxpy leaves out are null; times are seconds since
1970 (a time without a zone is read as UTC, as GPX requires)."""
import datetime
import json
import math
import sys

import gpxpy


def number(value):
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def seconds(time):
    if time is None:
        return None
    if time.tzinfo is None:
        time = time.replace(tzinfo=datetime.timezone.utc)
    return time.timestamp()


def point(p):
    return {
        "lat": number(p.latitude), "lon": number(p.longitude), "ele": number(p.elevation),
        "time": seconds(p.time), "name": p.name,
        "speed": number(getattr(p, "speed", None)), "course": number(getattr(p, "course", None)),
    }


def read(path):
    try:
        with open(path, encoding="utf-8-sig") as file:
            gpx = gpxpy.parse(file)
    except Exception as error:  # gpxpy refuses the file
        return {"file": path, "ok": False, "error": str(error)[:200]}
    return {
        "file": path, "ok": True, "version": gpx.version, "name": gpx.name,
        "waypoints": [point(p) for p in gpx.waypoints],
        "routes": [{"name": r.name, "points": [point(p) for p in r.points]} for r in gpx.routes],
        "tracks": [{"name": t.name, "segments": [[point(p) for p in s.points] for s in t.segments]} for t in gpx.tracks],
    }


json.dump([read(path) for path in sys.argv[1:]], sys.stdout)
