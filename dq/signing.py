"""SigV4 for a deployed API: API Gateway's IAM authorization checks every request's signature.

Signing is botocore's own `SigV4Auth`, so the canonical request (double-encoded path, sorted query, payload hash,
session token) is exactly what API Gateway verifies; this module only decides when to sign and for which region.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

SERVICE: Final = "execute-api"
# `{api}.execute-api.{region}.amazonaws.com`, the China partition's `.com.cn`, and private APIs through a VPC
# endpoint (`{api}-{vpce}.execute-api.{region}.vpce.amazonaws.com`).
_EXECUTE_API_HOST: Final = re.compile(
    r"^[a-z0-9-]+\.execute-api\.(?P<region>[a-z]{2}(?:-[a-z]+)+-\d)\.(?:vpce\.)?amazonaws\.com(?:\.cn)?$"
)


def execute_api_region(host: str | None) -> str | None:
    """The region of an API Gateway host, or None for any other host (the local server is never signed)."""
    match = _EXECUTE_API_HOST.match((host or "").lower())
    return match.group("region") if match else None


def caller_credentials() -> Any:
    """The caller's credentials as the AWS CLI finds them (environment, profile, SSO, instance role), or None."""
    import botocore.session

    return botocore.session.get_session().get_credentials()


def signed_headers(
    method: str, url: str, headers: Mapping[str, str], body: bytes | None, region: str, credentials: Any
) -> dict[str, str]:
    """`headers` plus `Authorization`, `X-Amz-Date` and (for temporary credentials) `X-Amz-Security-Token`.
    Every header given is signed, so the request must be sent with exactly these headers."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    request = AWSRequest(method=method, url=url, data=body or b"", headers=dict(headers))
    SigV4Auth(credentials, SERVICE, region).add_auth(request)
    return dict(request.headers.items())
