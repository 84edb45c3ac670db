"""SQS's message digests: `MD5OfMessageBody` and `MD5OfMessageAttributes`.

The Java and .NET SDKs (and several consumer libraries) recompute both from what they sent or received and reject
the message when they differ, so the algorithm must be SQS's to the byte: attribute names sorted; for each, the
name, then the data type, each as a 4-byte big-endian length and its UTF-8 bytes; then a transport byte (1 for a
String or Number value, 2 for a Binary one) and the value the same way (a Binary value as its raw bytes).
"""

from __future__ import annotations

import base64
import hashlib
import struct

_STRING_TRANSPORT = b"\x01"
_BINARY_TRANSPORT = b"\x02"
_PLAIN_TYPE = "String"


def md5_of_body(body: str) -> str:
    return hashlib.md5(body.encode("utf-8"), usedforsecurity=False).hexdigest()


def md5_of_attributes(attributes: dict[str, str], attribute_types: dict[str, str]) -> str | None:
    """None when there are no attributes (SQS then sends no MD5OfMessageAttributes). `attribute_types` lists the
    attributes whose type is not plain `String`; a Binary attribute's value is base64 text."""
    if not attributes:
        return None
    digest = hashlib.md5(usedforsecurity=False)
    # The SDKs sort names as Java strings (UTF-16 code units); UTF-16-BE bytes sort the same way.
    for name in sorted(attributes, key=lambda name: name.encode("utf-16-be", "surrogatepass")):
        data_type = attribute_types.get(name, _PLAIN_TYPE)
        digest.update(_sized(name.encode("utf-8")))
        digest.update(_sized(data_type.encode("utf-8")))
        if data_type.startswith("Binary"):
            digest.update(_BINARY_TRANSPORT + _sized(base64.b64decode(attributes[name])))
        else:
            digest.update(_STRING_TRANSPORT + _sized(attributes[name].encode("utf-8")))
    return digest.hexdigest()


def _sized(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data
