"""Verification of wf's webhook deliveries, in both signature schemes a
subscriber may choose:

- wf's own (the default): ``X-WF-Timestamp`` (Unix seconds) and
  ``X-WF-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">``,
  keyed with the subscriber's secret as given;
- Standard Webhooks (https://www.standardwebhooks.com): ``webhook-id``,
  ``webhook-timestamp`` and ``webhook-signature: v1,<base64 HMAC-SHA256 of
  "<id>.<timestamp>.<body>">`` (several, space-separated, during a key
  rotation), keyed with the base64-decoded part of a ``whsec_...`` secret.

Both reject a timestamp more than ``tolerance`` seconds from now (a replayed
delivery) and compare signatures in constant time. Pass the raw body bytes,
before any JSON decoding.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from typing import Mapping, Optional, Union

DEFAULT_TOLERANCE = 300.0


class SignatureError(Exception):
    """A delivery that was not signed with the secret, or is too old or new."""


def _header(headers: Mapping[str, str], name: str) -> str:
    for k, v in headers.items():
        if k.lower() == name.lower():
            return v
    raise SignatureError(f"the {name} header is missing")


def _check_timestamp(timestamp: str, now: Optional[float], tolerance: float) -> None:
    try:
        sec = int(timestamp)
    except ValueError:
        raise SignatureError(f"timestamp {timestamp!r} is not Unix seconds") from None
    now = time.time() if now is None else now
    if abs(now - sec) > tolerance:
        raise SignatureError(f"timestamp is {now - sec:.0f}s away from now, more than {tolerance:g}s")


def _bytes(secret: Union[str, bytes]) -> bytes:
    return secret.encode() if isinstance(secret, str) else secret


def sign_wf(secret: Union[str, bytes], timestamp: str, body: bytes) -> str:
    """The X-WF-Signature value of a delivery."""
    mac = hmac.new(_bytes(secret), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify_wf(secret: Union[str, bytes], headers: Mapping[str, str], body: bytes, *,
              tolerance: float = DEFAULT_TOLERANCE, now: Optional[float] = None) -> None:
    """Checks a delivery signed in wf's scheme; raises SignatureError."""
    timestamp = _header(headers, "X-WF-Timestamp")
    signature = _header(headers, "X-WF-Signature")
    _check_timestamp(timestamp, now, tolerance)
    if not signature.startswith("sha256="):
        raise SignatureError("expected sha256= followed by a hex HMAC-SHA256")
    if not hmac.compare_digest(signature.encode(), sign_wf(secret, timestamp, body).encode()):
        raise SignatureError("the HMAC does not match")


def standard_key(secret: str) -> bytes:
    """The HMAC key of a Standard Webhooks secret (whsec_ and base64)."""
    if not secret.startswith("whsec_"):
        raise SignatureError("a Standard Webhooks secret starts with whsec_")
    try:
        return base64.b64decode(secret[len("whsec_"):], validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError("a Standard Webhooks secret is whsec_ followed by base64") from None


def sign_standard(secret: str, msg_id: str, timestamp: str, body: bytes) -> str:
    """The webhook-signature value of a delivery (one v1 signature)."""
    mac = hmac.new(standard_key(secret), f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode()


def verify_standard(secret: str, headers: Mapping[str, str], body: bytes, *,
                    tolerance: float = DEFAULT_TOLERANCE, now: Optional[float] = None) -> None:
    """Checks a Standard Webhooks delivery; raises SignatureError."""
    msg_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    _check_timestamp(timestamp, now, tolerance)
    want = sign_standard(secret, msg_id, timestamp, body).encode()
    for sig in signatures.split():
        if hmac.compare_digest(sig.encode(), want):
            return
    raise SignatureError("no v1 signature matches")


def verify(secret: str, headers: Mapping[str, str], body: bytes, *,
           tolerance: float = DEFAULT_TOLERANCE, now: Optional[float] = None) -> None:
    """Checks a delivery in whichever scheme its headers use."""
    if any(k.lower() == "webhook-signature" for k in headers):
        verify_standard(secret, headers, body, tolerance=tolerance, now=now)
    else:
        verify_wf(secret, headers, body, tolerance=tolerance, now=now)
