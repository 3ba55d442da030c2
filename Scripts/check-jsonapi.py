#!/usr/bin/env python3
"""Reads JSON:API documents back with real JSON:API software, for the serializer's tests.

Input (stdin): a JSON array of documents. Output (stdout): a JSON array with, per document,
what the jsonapi-pydantic validator said and what the jsonapi-client library read: each
resource's type, id, attributes and relationship linkage, and which related resources the
client could resolve from the document's `included` without asking a server."""
import json
import sys

import jsonapi_client
from jsonapi_pydantic.v1_0 import TopLevel


def linkage(relationship):
    data = relationship.as_json_resource_identifiers
    if data is None:
        return None
    if isinstance(data, list):
        return [[item["type"], item["id"]] for item in data]
    return [data["type"], data["id"]]


def view(session, resource):
    relationships, resolved = {}, {}
    for name, relationship in resource._relationships.items():
        relationships[name] = linkage(relationship)
        identifiers = relationships[name]
        if identifiers is None:
            continue
        for type_, id_ in identifiers if isinstance(identifiers[0], list) else [identifiers]:
            found = session.resources_by_resource_identifier.get((type_, id_))
            if found is not None:
                resolved.setdefault(name, []).append({"type": found.type, "id": found.id, "attributes": dict(found._attributes)})
    return {
        "type": resource.type, "id": resource.id, "attributes": dict(resource._attributes),
        "relationships": relationships, "resolved": resolved,
    }


def check(document):
    result = {}
    try:
        TopLevel.model_validate(document)
        result["valid"] = True
    except Exception as error:
        result["valid"] = False
        result["validationError"] = str(error)[:500]
    try:
        session = jsonapi_client.Session("http://server.invalid")
        read = session.read(document, no_cache=False)
        result["resources"] = [view(session, r) for r in read.resources]
        result["included"] = [[r.type, r.id] for r in read.included]
        result["meta"] = dict(read.meta.meta) if getattr(read.meta, "meta", None) else None
    except Exception as error:
        result["readError"] = f"{type(error).__name__}: {error}"[:500]
    return result


json.dump([check(document) for document in json.load(sys.stdin)], sys.stdout)
