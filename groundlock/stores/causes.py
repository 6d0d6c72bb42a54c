"""A store error's cause in fixed words, safe to log and show.

delta-rs (object_store) messages quote endpoints, bucket paths and request URLs, which may
carry a presigned credential, so no message is ever shown: it is matched against known
causes, and the caller shows the error's class with the cause found here.
"""

from __future__ import annotations

__all__ = ["store_error_cause"]

_REASONS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("NoSuchBucket",), "the bucket does not exist"),
    (("URL scheme is not allowed",), "plain http is refused (set AWS_ALLOW_HTTP=true)"),
    (("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403 Forbidden"),
     "access denied (credentials or permissions)"),
    (("Connection refused", "tcp connect error", "dns error", "failed to lookup address"),
     "the endpoint cannot be reached"),
    (("timed out",), "the endpoint did not answer in time"),
    (("No files in log segment", "not a Delta table"), "not a Delta table"),
)  # fmt: skip
"""Text delta-rs (object_store) puts in an error, and the cause it means, in our words."""


def store_error_cause(exc: BaseException) -> str:
    """A short cause for a store error, from a fixed vocabulary, never the error's text.

    delta-rs messages quote endpoints, bucket paths and sometimes request URLs that may
    carry a presigned credential, so the message itself is never shown; it is only matched
    against known causes. An unknown cause says so; the class still names the kind.
    """
    text = str(exc)
    for needles, reason in _REASONS:
        if any(needle in text for needle in needles):
            return reason
    return "unrecognised cause"
