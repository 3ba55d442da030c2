#!/usr/bin/env python3
"""Validates JSON profiles against Docs/profile.schema.json.

Usage: check-profile-schema.py SCHEMA FILE...  (a FILE of '-' reads one document per line
from standard input). Prints 'valid' or 'invalid: <reason>' per document, one line each.
"""
import json
import sys

import jsonschema


def main() -> int:
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    documents = []
    for name in sys.argv[2:]:
        if name == "-":
            documents += [line for line in sys.stdin.read().split("\n") if line.strip()]
        else:
            documents.append(open(name, encoding="utf-8").read())
    for text in documents:
        try:
            document = json.loads(text)
        except ValueError as error:
            print(f"invalid: not JSON ({error})")
            continue
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
        print("valid" if not errors else f"invalid: {errors[0].message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
