"""SQS's MD5OfMessageBody and MD5OfMessageAttributes, checked against published vectors and moto's own code."""

from __future__ import annotations

import base64
import hashlib

import pytest
from moto.sqs.models import Message as MotoMessage
from queue_core.attribute_digest import md5_of_attributes, md5_of_body


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# Digests published with other SQS implementations' tests (AWS's documentation samples among them).
KNOWN = [
    (
        {"test_attribute_name_2": "test_attribute_value_2", "test_attribute_name_1": "test_attribute_value_1"},
        {},
        "d53f3b558fe951154770f25cb63dbba9",
    ),
    ({"test_attribute_name": _b64(b"test_attribute_value")}, {"test_attribute_name": "Binary"},
     "23f6bd27ea87aab7dfeadcc9aebee495"),
    ({"ordinal": "1", "category": "test"}, {"ordinal": "Number"}, "d21ae90c49061e927f57df5f5d72be1f"),
    ({"SellerName": "Example Store"}, {}, "cd28f3b68aeee4b2eac9c66f2f694b58"),
]  # fmt: skip


@pytest.mark.parametrize(("attributes", "types", "expected"), KNOWN)
def test_attribute_digest_matches_published_vectors(attributes, types, expected) -> None:
    assert md5_of_attributes(attributes, types) == expected


def test_attribute_digest_matches_motos_independent_implementation_for_every_kind() -> None:
    attributes = {
        "s": "héllo",
        "s.custom": "x",
        "n": "-1.5e3",
        "n-f": "0.25",
        "b": _b64(b"\x00\x01\xff"),
        "b_gif": _b64(b"GIF89a"),
        "Z": "last?",
    }
    types = {"s.custom": "String.custom", "n": "Number", "n-f": "Number.float", "b": "Binary", "b_gif": "Binary.gif"}
    moto = MotoMessage("id", "body")
    for name, value in attributes.items():
        data_type = types.get(name, "String")
        if data_type.startswith("Binary"):
            moto.message_attributes[name] = {"DataType": data_type, "BinaryValue": base64.b64decode(value)}
        else:
            moto.message_attributes[name] = {"DataType": data_type, "StringValue": value}
    assert md5_of_attributes(attributes, types) == moto.attribute_md5


def test_no_attributes_have_no_digest_and_the_body_digest_is_md5_of_utf8() -> None:
    assert md5_of_attributes({}, {}) is None
    assert md5_of_body("héllo") == hashlib.md5("héllo".encode()).hexdigest()
    assert md5_of_body("hello") == "5d41402abc4b2a76b9719d911017c592"
