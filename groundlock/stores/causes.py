"""A store error's cause in fixed words, safe to log and show.

delta-rs (object_store) messages quote endpoints, bucket and container paths and request
URLs, which may carry a presigned credential or a SAS token, so no message is ever shown:
it is matched against known causes, and the caller shows the error's class with the cause
found here. S3 and Azure name the same fault in their own words (``NoSuchBucket``,
``ContainerNotFound``); a cause whose remedy differs per store (the option that allows
plain http) is told apart by the store object_store names in the message.
"""

from __future__ import annotations

__all__ = ["store_error_cause"]

_AZURE = "MicrosoftAzure"
"""What object_store puts in every Azure error (``Generic MicrosoftAzure error``)."""

_REASONS: tuple[tuple[tuple[str, ...], str, str | None], ...] = (
    (("NoSuchBucket",), "the bucket does not exist", None),
    (("ContainerNotFound",), "the container does not exist", None),
    (("Account must be specified",),
     "no storage account is named (set AZURE_STORAGE_ACCOUNT_NAME)", None),
    (("Invalid Access Key",), "the account key is not valid base64", None),
    (("URL scheme is not allowed",), "plain http is refused (set AZURE_ALLOW_HTTP=true)", _AZURE),
    (("URL scheme is not allowed",), "plain http is refused (set AWS_ALLOW_HTTP=true)", None),
    (("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "AuthenticationFailed",
      "AuthorizationFailure", "AuthorizationPermissionMismatch", "403 Forbidden"),
     "access denied (credentials or permissions)", None),
    (("ResourceNotFound",), "the storage account or resource does not exist", None),
    (("Connection refused", "tcp connect error", "dns error", "failed to lookup address"),
     "the endpoint cannot be reached", None),
    (("timed out",), "the endpoint did not answer in time", None),
    (("No files in log segment", "not a Delta table"), "not a Delta table", None),
)  # fmt: skip
"""Text delta-rs (object_store) puts in an error, the cause it means in our words, and the
store whose message it must also be (None: any store)."""


def store_error_cause(exc: BaseException) -> str:
    """A short cause for a store error, from a fixed vocabulary, never the error's text.

    delta-rs messages quote endpoints, bucket paths and sometimes request URLs that may
    carry a presigned credential, so the message itself is never shown; it is only matched
    against known causes. An unknown cause says so; the class still names the kind.
    """
    text = str(exc)
    for needles, reason, store in _REASONS:
        if (store is None or store in text) and any(needle in text for needle in needles):
            return reason
    return "unrecognised cause"
