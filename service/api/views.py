"""The JSON API (v1): submit, and follow a submission to its result."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET, require_POST

from ..accounts.identity import signed_in
from ..courses.access import assignment_for, submission_for
from ..courses.models import STAFF_ROLES
from ..submissions.intake import Refusal, body_too_large, position, receive
from ..submissions.models import Kind
from .auth import error, token_required


@require_POST
@token_required
def submit(request: HttpRequest, slug: str) -> HttpResponse:
    assignment, _ = assignment_for(request.user, slug)
    if body_too_large(request.META):
        return error(413, f"the upload is larger than {settings.MAX_UPLOAD_BYTES // 1024} KiB")
    kind_text = request.POST.get("kind", "")
    if kind_text not in Kind.values:
        return error(400, "kind must be self_check or submit")
    upload = request.FILES.get("file")
    if upload is None:
        return error(400, "send the file as the multipart field 'file'")
    raw = upload.read(assignment.rubric().limits.max_file_kb * 1024 + 1)
    outcome = receive(assignment, signed_in(request), Kind(kind_text), upload.name or "", raw)
    if isinstance(outcome, Refusal):
        return error(outcome.status, outcome.error, outcome.retry_after)
    body = outcome.to_dict()
    body["queue_position"] = position(outcome)
    return JsonResponse(body, status=201)


@require_GET
@token_required
def submission(request: HttpRequest, submission_id: int) -> HttpResponse:
    found, role = submission_for(request.user, submission_id)
    body = found.to_dict(viewer_is_staff=role in STAFF_ROLES)
    body["queue_position"] = position(found)
    return JsonResponse(body)
