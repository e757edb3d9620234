"""Files users attach: an upload's presigned POST, and the owner's download link."""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import APIRouter, Path, Response

from sstools_agent.domain.attachments import FILE_ID_PATTERN
from sstools_agent.domain.private_responses import PRIVATE_RESPONSE_HEADERS
from sstools_agent.http.auth import AuthenticatedRoute
from sstools_agent.rest.deps import Api, Caller, responses
from sstools_agent.rest.schemas import DownloadAnswer, FileLimitsAnswer, UploadAnswer, UploadBody

FILES: Final = "/api/assistant/files"
FileId = Annotated[str, Path(pattern=FILE_ID_PATTERN)]

router = APIRouter(route_class=AuthenticatedRoute)


@router.post(FILES, status_code=201, responses=responses(401))
async def request_upload(body: UploadBody, caller: Caller, api: Api) -> UploadAnswer:
    """A file id and a presigned S3 POST for its bytes (the browser uploads them itself);
    422 INVALID_ATTACHMENT for a type, size or name that may not be uploaded."""
    granted = await api.files.request_upload(
        caller.subject, body.name, body.content_type, body.size
    )
    return UploadAnswer.of(granted)


@router.get(f"{FILES}/limits", responses=responses(401))
async def limits(caller: Caller, api: Api) -> FileLimitsAnswer:
    """The deployment's limits on attachments (sizes, count, types), as the REST API and the
    chat enforce them."""
    del caller  # signed in only, as every route here
    return FileLimitsAnswer.of(api.files.limits)


@router.get(f"{FILES}/{{file_id}}/download", responses=responses(401, 404))
async def download(file_id: FileId, caller: Caller, api: Api, response: Response) -> DownloadAnswer:
    """A link, valid for 5 minutes, that serves the caller's file as an attachment; 404 for
    another user's file or one that is gone. The link is a bearer URL: kept by no cache."""
    link = await api.files.download(caller.subject, file_id)
    response.headers.update(PRIVATE_RESPONSE_HEADERS)
    return DownloadAnswer(url=link.url, expires_at=link.expires_at)
