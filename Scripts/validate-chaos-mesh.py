#!/usr/bin/env python3
"""Validates Chaos Mesh manifests (a YAML stream, from a file or standard input) against
Chaos Mesh's published CRD schemas (Tests/Fixtures/ChaosMesh): each document's apiVersion
and kind must be a CRD's, the whole document must satisfy its openAPIV3Schema, its name must
be a Kubernetes name, and every Go duration field must parse as Go's time.ParseDuration
reads one. Exit status 1, with every problem, when any document fails.

    chaos export --chaos-mesh --selector app=api profile.json | python3 Scripts/validate-chaos-mesh.py
"""
import os
import re
import sys

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "Tests", "Fixtures", "ChaosMesh")
NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
GO_DURATION = re.compile(r"^[-+]?(0|([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+$")
# Fields the CRDs describe as Go durations without a pattern of their own.
DURATION_FIELDS = [("TimeChaos", ["spec", "timeOffset"]), ("IOChaos", ["spec", "delay"]),
                   ("NetworkChaos", ["spec", "delay", "latency"])]


def schemas():
    found = {}
    for name in sorted(os.listdir(FIXTURES)):
        if not name.endswith(".yaml"):
            continue
        with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
            crd = yaml.safe_load(f)
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            found[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return found


def field(document, path):
    for key in path:
        if not isinstance(document, dict) or key not in document:
            return None
        document = document[key]
    return document


def main():
    text = open(sys.argv[1], encoding="utf-8").read() if len(sys.argv) > 1 else sys.stdin.read()
    known = schemas()
    problems, count = [], 0
    for number, document in enumerate(yaml.safe_load_all(text), 1):
        if document is None:
            continue
        count += 1
        key = (document.get("apiVersion"), document.get("kind"))
        where = f"document {number} ({key[1]})"
        if key not in known:
            problems.append(f"{where}: no CRD for apiVersion {key[0]!r} kind {key[1]!r}")
            continue
        validator = jsonschema.Draft7Validator(known[key])
        for error in validator.iter_errors(document):
            path = ".".join(str(p) for p in error.absolute_path) or "(document)"
            problems.append(f"{where}: {path}: {error.message}")
        name = field(document, ["metadata", "name"])
        if not isinstance(name, str) or len(name) > 253 or not NAME.match(name):
            problems.append(f"{where}: metadata.name {name!r} is no Kubernetes name")
        for kind, path in DURATION_FIELDS:
            value = field(document, path)
            if kind == key[1] and value is not None and not GO_DURATION.match(str(value)):
                problems.append(f"{where}: {'.'.join(path)} {value!r} is no Go duration")
    if count == 0:
        problems.append("no manifests to validate")
    for problem in problems:
        print(f"validate-chaos-mesh: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"validate-chaos-mesh: {count} manifests valid against Chaos Mesh's CRD schemas")
    return 0


if __name__ == "__main__":
    sys.exit(main())
