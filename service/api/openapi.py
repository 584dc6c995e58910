"""The JSON API described as OpenAPI 3.1, served at /api/v1/openapi.json.

Built from the service's own values (the slug pattern, the submission states and kinds, the
limits), so the document changes with the code it describes; the test suite checks every
response of the API against it (tests/service/test_api_schema.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.http import etag, require_safe

from ..courses.access import BIGINT_MAX
from ..courses.models import SLUG_PATTERN
from ..submissions.models import Kind, State

Schema = dict[str, Any]
PREFIX = "/api/v1"


def _ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(kind: str, **more: Any) -> Schema:
    return {"type": [kind, "null"], **more}


SUBMISSION: Schema = {
    "type": "object",
    "description": "A submission as its owner (or the course's staff) may see it.",
    "additionalProperties": False,
    "required": [
        "id",
        "assignment",
        "kind",
        "received_at",
        "sha256",
        "status",
        "score",
        "max_score",
        "hidden_results_withheld",
        "late_penalty",
        "problem",
        "feedback_url",
        "sections",
        "queue_position",
    ],
    "properties": {
        "id": {"type": "integer", "minimum": 1, "maximum": BIGINT_MAX},
        "assignment": {"type": "string", "pattern": f"^{SLUG_PATTERN}$"},
        "kind": {"type": "string", "enum": list(Kind.values)},
        "received_at": {"type": "string", "format": "date-time"},
        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "status": {
            "type": "string",
            "enum": list(State.values),
            "description": "While hidden results are withheld, a timeout, oom or output_limit reads graded.",
        },
        "score": _nullable("number", description="Points, after any late penalty and override; null until graded."),
        "max_score": _nullable("number"),
        "hidden_results_withheld": {
            "type": "boolean",
            "description": "True while score and max_score count the visible checks only.",
        },
        "late_penalty": {"type": "number", "minimum": 0, "maximum": 100, "description": "Percent taken off."},
        "problem": {"type": "string", "description": "Why the upload cannot be graded; empty when it can."},
        "feedback_url": {"type": "string", "pattern": "^/submissions/[0-9]+/feedback/$"},
        "sections": {
            "type": "array",
            "maxItems": 50,
            "description": (
                "While it is graded: each section whose points are settled, as soon as it is (while"
                " hidden results are withheld: the sections that waited for no hidden probe, their"
                " visible checks' points). Empty otherwise."
            ),
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["title", "points", "max_points"],
                "properties": {
                    "title": {"type": "string"},
                    "points": {"type": "number"},
                    "max_points": {"type": "number"},
                },
            },
        },
        "queue_position": _nullable(
            "integer", minimum=1, description="Jobs of its lane up to and including this one; null once finished."
        ),
    },
}

ERROR: Schema = {
    "type": "object",
    "additionalProperties": False,
    "required": ["error"],
    "properties": {"error": {"type": "string", "description": "What went wrong, in a sentence."}},
}

RETRY_AFTER: Schema = {
    "description": "Seconds until the request may succeed.",
    "required": True,
    "schema": {"type": "integer", "minimum": 1},
}


def _error(description: str, *, retry: bool = False) -> Schema:
    response: Schema = {"description": description, "content": {"application/json": {"schema": _ref("Error")}}}
    if retry:
        response["headers"] = {"Retry-After": RETRY_AFTER}
    return response


def _submit() -> Schema:
    kib = settings.MAX_UPLOAD_BYTES // 1024
    return {
        "operationId": "submit",
        "summary": "Upload a file for a self-check (visible checks, not counted) or a counted submission.",
        "parameters": [
            {
                "name": "slug",
                "in": "path",
                "required": True,
                "schema": {"type": "string", "pattern": f"^{SLUG_PATTERN}$"},
            }
        ],
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["kind", "file"],
                        "properties": {
                            "kind": {"type": "string", "enum": list(Kind.values)},
                            "file": {"type": "string", "format": "binary", "description": f"At most {kib} KiB."},
                        },
                    }
                }
            },
        },
        "responses": {
            "201": {
                "description": "Received: stored, and queued unless it cannot be graded (see problem).",
                "content": {"application/json": {"schema": _ref("Submission")}},
                "links": {
                    "GetSubmission": {
                        "operationId": "submission",
                        "parameters": {"submission_id": "$response.body#/id"},
                    }
                },
            },
            "400": _error("A field is missing or malformed (or the address holds a NUL or bytes that are not UTF-8)."),
            "401": _error("No token, or not a valid one."),
            "403": _error("The assignment is closed to counted submissions."),
            "404": _error("No such assignment in a course of yours."),
            "411": _error("A chunked upload without a Content-Length."),
            "413": _error(f"The upload is larger than {kib} KiB."),
            "429": _error("The self-check or submission limit is reached.", retry=True),
            "503": _error("The grading queue is full (self-checks only).", retry=True),
        },
    }


def _submission() -> Schema:
    return {
        "operationId": "submission",
        "summary": "A submission, its state, score and place in the queue.",
        "parameters": [
            {
                "name": "submission_id",
                "in": "path",
                "required": True,
                "schema": {"type": "integer", "minimum": 1, "maximum": BIGINT_MAX},
            }
        ],
        "responses": {
            "200": {"description": "The submission.", "content": {"application/json": {"schema": _ref("Submission")}}},
            "400": _error("The address or a header holds a NUL character or bytes that are not UTF-8."),
            "401": _error("No token, or not a valid one."),
            "404": _error("No such submission, or not yours (staff see their course's)."),
        },
    }


def _document() -> Schema:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Autograder API",
            "version": "1",
            "description": (
                "Every error, an unknown route (404) or method (405, with Allow) included, is "
                '{"error": "..."}. Authenticate with the header Authorization: Token agt_....'
            ),
        },
        "paths": {
            f"{PREFIX}/assignments/{{slug}}/submissions": {"post": _submit()},
            f"{PREFIX}/submissions/{{submission_id}}": {"get": _submission()},
            f"{PREFIX}/openapi.json": {
                "get": {
                    "operationId": "openapi",
                    "summary": "This document.",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "The OpenAPI document.",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        }
                    },
                }
            },
        },
        "components": {
            "schemas": {"Submission": SUBMISSION, "Error": ERROR},
            "securitySchemes": {
                "token": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Authorization",
                    "description": "Token agt_..., as `grader service token USERNAME` prints it (shown once).",
                }
            },
        },
        "security": [{"token": []}],
    }


@functools.cache
def _body() -> bytes:
    return json.dumps(_document(), indent=1).encode()


def document() -> Schema:
    """The document, as a fresh dict (callers may change it)."""
    parsed: Schema = json.loads(_body())
    return parsed


@require_safe
@cache_control(public=True, max_age=3600)
@etag(lambda request: hashlib.sha256(_body()).hexdigest())
def openapi_json(request: HttpRequest) -> HttpResponse:
    return HttpResponse(_body(), content_type="application/json")
